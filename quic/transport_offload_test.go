package quic

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"slices"
	"sync"
	"testing"
)

// TestInjectDatagramAndConnectionIDAdded plays the integrated offload mode:
// client datagrams reach the server Transport only through InjectDatagram
// (as an agent delivers validated Initials from its AF_XDP rings), the
// server's replies go out through its own socket, and the IDs it routes
// are reported for the fast path.
func TestInjectDatagramAndConnectionIDAdded(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	var admitted [][]byte
	srv := &Transport{
		Conn:               listenUDP(t),
		ConnectionIDLength: 8,
		ConnectionIDAdded: func(cid []byte) {
			mu.Lock()
			admitted = append(admitted, bytes.Clone(cid))
			mu.Unlock()
		},
	}
	defer srv.Close()
	ln, err := srv.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		s, err := c.AcceptStream(ctx)
		if err != nil {
			return
		}
		_, _ = io.Copy(s, s)
		_ = s.Close()
	}()

	// The client talks to a relay socket; the relay injects what it reads.
	relay := listenUDP(t)
	defer relay.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := relay.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if err := srv.InjectDatagram(buf[:n], from); err != nil && !errors.Is(err, ErrTransportClosed) {
				t.Errorf("InjectDatagram: %v", err)
				return
			}
		}
	}()
	c, err := DialAddr(ctx, relay.LocalAddr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("through the offload path"))

	// The server's handshake SCID is what the client now sends to.
	c.mu.Lock()
	serverCID := bytes.Clone(c.cids.dest)
	c.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, cid := range admitted {
		if bytes.Equal(cid, serverCID) {
			found = true
		}
	}
	if !found {
		t.Fatalf("ConnectionIDAdded saw %x, not the server's SCID %x", admitted, serverCID)
	}

	// ConnectionIDs lists what is routed now: announced IDs only,
	// including the one the client sends to.
	var routed [][]byte
	for cid := range srv.ConnectionIDs {
		routed = append(routed, bytes.Clone(cid))
	}
	sawServerCID := false
	for _, r := range routed {
		if !slices.ContainsFunc(admitted, func(a []byte) bool { return bytes.Equal(a, r) }) {
			t.Errorf("ConnectionIDs yields %x, never announced", r)
		}
		sawServerCID = sawServerCID || bytes.Equal(r, serverCID)
	}
	if !sawServerCID || len(routed) < 2 {
		t.Errorf("ConnectionIDs yields %d IDs without the server's SCID %x: %x", len(routed), serverCID, routed)
	}
	for range srv.ConnectionIDs {
		break // the runtime fails the test if the iterator ignores the stop
	}
}

func TestInjectDatagramErrors(t *testing.T) {
	tr := &Transport{Conn: listenUDP(t)}
	if err := tr.InjectDatagram(make([]byte, receiveBufferSize+1), netipLoopback()); !errors.Is(err, ErrDatagramTooLarge) {
		t.Fatalf("oversized datagram: %v", err)
	}
	if err := tr.InjectDatagram(nil, netipLoopback()); err != nil {
		t.Fatalf("empty datagram: %v", err)
	}
	tr.Close()
	if err := tr.InjectDatagram([]byte{1}, netipLoopback()); !errors.Is(err, ErrTransportClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func netipLoopback() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:4433") }
