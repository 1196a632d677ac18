package fileserver

import (
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/turboretry/turboretry/internal/testcert"
)

// resumes runs a TLS 1.3 handshake between server and a client whose
// cache holds at most the session given (none: nil) and reports whether
// it resumed, and the session the client was handed.
func resumes(t *testing.T, server *tls.Config, session *tls.ClientSessionState) (bool, *tls.ClientSessionState) {
	t.Helper()
	// TCP on loopback, not net.Pipe: a TLS 1.3 server writes its tickets
	// while the client still writes its Finished, which an unbuffered
	// pipe deadlocks on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := tls.Server(a, server)
		if s.Handshake() == nil {
			_, _ = s.Write([]byte("x")) // the session ticket goes out before it
		}
		a.Close()
	}()
	cache := tls.NewLRUClientSessionCache(1)
	if session != nil {
		cache.Put("localhost", session)
	}
	c := tls.Client(b, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", ClientSessionCache: cache, MinVersion: tls.VersionTLS13})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadFull(c, make([]byte, 1)) // processes the ticket
	resumed := c.ConnectionState().DidResume
	b.Close()
	<-done
	fresh, _ := cache.Get("localhost")
	return resumed, fresh
}

// TestTicketKeys: a session resumes across ticketKeysKept-1 rotations and
// no longer, and a configuration with keys of its own cannot resume it.
func TestTicketKeys(t *testing.T) {
	srv, _ := testcert.TLS(t, "x")
	keys := &ticketKeys{c: srv.Clone()}
	keys.rotate()
	other := &ticketKeys{c: srv.Clone()}
	other.rotate()
	resumed, first := resumes(t, keys.c, nil)
	if resumed || first == nil {
		t.Fatalf("first handshake: resumed %v, ticket %v", resumed, first != nil)
	}
	if resumed, _ := resumes(t, other.c, first); resumed {
		t.Fatal("a configuration with other keys resumed the session")
	}
	for i := 1; i < ticketKeysKept; i++ {
		keys.rotate()
		if resumed, _ := resumes(t, keys.c, first); !resumed {
			t.Fatalf("after %d rotations the first ticket does not resume", i)
		}
	}
	keys.rotate()
	if resumed, _ := resumes(t, keys.c, first); resumed {
		t.Fatalf("the first ticket still resumes after %d rotations", ticketKeysKept)
	}
}
