package http3

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/turboretry/turboretry/quic"
)

func TestSettingsCompatibleFor0RTT(t *testing.T) {
	base := settings{MaxFieldSectionSize: 1024, HasMaxFieldSectionSize: true, EnableConnectProtocol: true, H3Datagram: true, Other: "\x21\x01"}
	for _, tc := range []struct {
		name string
		now  func(*settings)
		ok   bool
	}{
		{"same", func(*settings) {}, true},
		{"larger field section", func(s *settings) { s.MaxFieldSectionSize = 2048 }, true},
		{"no field section limit now", func(s *settings) { s.HasMaxFieldSectionSize = false }, true},
		{"smaller field section", func(s *settings) { s.MaxFieldSectionSize = 1023 }, false},
		{"datagrams off", func(s *settings) { s.H3Datagram = false }, false},
		{"extended CONNECT off", func(s *settings) { s.EnableConnectProtocol = false }, false},
		{"other setting changed", func(s *settings) { s.Other = "\x21\x02" }, false},
		{"other setting added", func(s *settings) { s.Other += "\x22\x01" }, false},
	} {
		now := base
		tc.now(&now)
		if got := settingsCompatible(base, now); got != tc.ok {
			t.Errorf("%s: compatible = %v, want %v", tc.name, got, tc.ok)
		}
	}
	// A ticket from before a feature was on allows turning it on.
	on := base
	on.Other = ""
	if !settingsCompatible(settings{MaxFieldSectionSize: 10, HasMaxFieldSectionSize: true}, on) {
		t.Error("enabling datagrams and extended CONNECT refused")
	}
	// No remembered settings (a ticket of another server): refused.
	if earlyDataAllowed([][]byte{[]byte("turboretry limits v2...")}, base) {
		t.Error("a ticket without settings allowed early data")
	}
	if earlyDataAllowed([][]byte{append(append([]byte(nil), ticketSettingsTag...), 0x06)}, base) {
		t.Error("a ticket with truncated settings allowed early data")
	}
}

// TestServer0RTTAfterSettingsChange resumes, with 0-RTT, a session of one
// Server at a second Server sharing its tls.Config (its ticket keys), as
// a restarted or replaced server would: 0-RTT is accepted when the second
// server's SETTINGS allow what the first one's did, and refused when its
// MaxHeaderBytes shrank.
func TestServer0RTTAfterSettingsChange(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxHeader  int
		accept0RTT bool
	}{
		{"same", 1024, true},
		{"increased", 1025, true},
		{"decreased", 1023, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverTLS, clientTLS := testCert(t)
			clientTLS.ClientSessionCache = &notifyingCache{ClientSessionCache: tls.NewLRUClientSessionCache(1), put: make(chan struct{}, 4)}
			cache := clientTLS.ClientSessionCache.(*notifyingCache)
			get := func(addr string) (string, error) {
				tr := &Transport{TLSClientConfig: clientTLS}
				defer tr.Close()
				req, _ := http.NewRequest(MethodGet0RTT, localhostURL(t, addr, "/"), nil)
				rsp, err := tr.RoundTrip(req)
				if err != nil {
					return "", err
				}
				defer rsp.Body.Close()
				b, err := io.ReadAll(rsp.Body)
				return string(b), err
			}
			if body, err := get(start0RTTServer(t, serverTLS, 1024)); err != nil || body != "false" {
				t.Fatalf("first request: %q %v", body, err)
			}
			select {
			case <-cache.put:
			case <-time.After(10 * time.Second): // a hang guard
				t.Fatal("no session ticket")
			}
			body, err := get(start0RTTServer(t, serverTLS, tc.maxHeader))
			switch {
			case tc.accept0RTT && (err != nil || body != "true"):
				t.Fatalf("resumed request: %q %v, want it accepted in 0-RTT", body, err)
			case !tc.accept0RTT && !errors.Is(err, quic.Err0RTTRejected):
				t.Fatalf("resumed request: %q %v, want Err0RTTRejected", body, err)
			}
		})
	}
}

// start0RTTServer serves, until the test ends, a handler that says
// whether its connection accepted 0-RTT.
func start0RTTServer(t *testing.T, serverTLS *tls.Config, maxHeader int) string {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	type connKey struct{}
	s := &Server{
		TLSConfig: serverTLS, MaxHeaderBytes: maxHeader, QUICConfig: &quic.Config{Allow0RTT: true},
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			qc := r.Context().Value(connKey{}).(*quic.Conn)
			io.WriteString(w, strconv.FormatBool(qc.ConnectionState().Used0RTT))
		}),
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(pc) }()
	t.Cleanup(func() {
		s.Close()
		<-done
		pc.Close()
	})
	return pc.LocalAddr().String()
}

// notifyingCache signals each session ticket stored.
type notifyingCache struct {
	tls.ClientSessionCache
	put chan struct{}
}

func (c *notifyingCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.put <- struct{}{}
	}
}
