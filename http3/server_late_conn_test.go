package http3

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/quic"
)

// TestShutdownLateConnection: a connection the listener hands out after
// Shutdown began (its handshake ended after it: a server draining after
// a restart finishes the handshakes whose first Initial came just before
// the switch, and app/fileserver gives them to ServeQUICConn) is served
// going away: its request is refused with H3_REQUEST_REJECTED at once,
// which clients retry on a new connection (after a restart, the
// successor's). Before, ServeQUICConn returned ErrServerClosed and left
// the connection open: the client waited for an answer until its idle
// timeout.
func TestShutdownLateConnection(t *testing.T) {
	simTest(t, func(t *testing.T, n *simnet.Network) {
		started, release := make(chan struct{}, 1), make(chan struct{})
		s := &Server{Handler: blockingHandler(started, release)}
		pc, err := n.Listen(simServerAddr)
		if err != nil {
			t.Fatal(err)
		}
		serverTLS, clientTLS := testCert(t)
		ln, err := quic.ListenEarly(pc, ConfigureTLSConfig(serverTLS), nil)
		if err != nil {
			t.Fatal(err)
		}
		served, late := make(chan error, 1), make(chan error, 1)
		go func() { served <- s.ServeListener(ln) }()
		url := "https://localhost:" + "443"
		trA := simTransport(t, n, clientTLS)
		slow := make(chan error, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, url+"/slow", nil)
			rsp, err := trA.RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(rsp.Body)
				rsp.Body.Close()
			}
			slow <- err
		}()
		<-started
		shut := make(chan error, 1)
		go func() { shut <- s.Shutdown(context.Background()) }()
		synctest.Wait()
		// What the listener hands out from now on, as app/fileserver's
		// drain does.
		lateCtx, stopLate := context.WithCancel(context.Background())
		lateServed := make(chan error, 8)
		go func() {
			var serving sync.WaitGroup
			defer close(lateServed)
			defer serving.Wait()
			for {
				qc, err := ln.Accept(lateCtx)
				if err != nil {
					return
				}
				serving.Go(func() { lateServed <- s.ServeQUICConn(qc) })
			}
		}()

		// Another client comes now.
		pcB, err := n.Listen(netip.MustParseAddrPort("198.18.1.2:4000"))
		if err != nil {
			t.Fatal(err)
		}
		qtB := &quic.Transport{Conn: pcB}
		trB := &Transport{TLSClientConfig: clientTLS, Dial: func(ctx context.Context, _ string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
			return qtB.DialEarly(ctx, net.UDPAddrFromAddrPort(simServerAddr), tlsConf, conf)
		}}
		began := time.Now()
		go func() {
			req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
			rsp, err := trB.RoundTrip(req)
			if err == nil {
				rsp.Body.Close()
			}
			late <- err
		}()
		select {
		case err := <-late:
			// Our client tried again on new connections, which this
			// server (still draining; no successor here) refused too:
			// the last try ends with the server's refusal or its GOAWAY,
			// both of which allow a retry.
			req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
			if again, _ := replayable(req, err); again == nil || time.Since(began) > time.Second {
				t.Errorf("late connection's request after %v: %v, want at once an answer that it was not processed (retry on a new connection)", time.Since(began), err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("late connection's request: no answer in 5 s")
		}
		close(release)
		if err := <-slow; err != nil {
			t.Errorf("slow request: %v", err)
		}
		trA.Close()
		if err := <-shut; err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		stopLate()
		for err := range lateServed {
			t.Logf("ServeQUICConn of a late connection: %v", err)
		}
		trB.Close()
		qtB.Close()
		pcB.Close()
		ln.Close()
		<-served
		pc.Close()
	})
}
