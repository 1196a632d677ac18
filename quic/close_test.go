package quic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/wire"
)

func TestCloseWithErrorSeenByQuicGo(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	if err := c.CloseWithError(7, "bye"); err != nil {
		t.Fatal(err)
	}
	_, err := sc.AcceptStream(ctx)
	var ae *quicgo.ApplicationError
	if !errors.As(err, &ae) || ae.ErrorCode != 7 || ae.ErrorMessage != "bye" || !ae.Remote {
		t.Fatalf("quic-go saw %v, want remote application error 7 bye", err)
	}
	// Our side reports the local error.
	_, err = c.AcceptStream(ctx)
	var ours *ApplicationError
	if !errors.As(err, &ours) || ours.Remote || ours.ErrorCode != 7 || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("our AcceptStream: %v", err)
	}
	if cause := connCause(c); !errors.As(cause, &ours) {
		t.Fatalf("context cause %v", cause)
	}
}

func TestQuicGoCloseWithErrorSeenByUs(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	if err := sc.CloseWithError(9, "server says bye"); err != nil {
		t.Fatal(err)
	}
	_, err := c.AcceptStream(ctx)
	var ae *ApplicationError
	if !errors.As(err, &ae) || ae.ErrorCode != 9 || ae.ErrorMessage != "server says bye" || !ae.Remote {
		t.Fatalf("we saw %v, want remote application error 9", err)
	}
	if !errors.Is(err, net.ErrClosed) {
		t.Fatal("error does not match net.ErrClosed")
	}
}

func TestCloseWithErrorOursToOurs(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = sc.CloseWithError(0x1234, "done")
	_, err = c.AcceptStream(ctx)
	var ae *ApplicationError
	if !errors.As(err, &ae) || ae.ErrorCode != 0x1234 || !ae.Remote || ae.ErrorMessage != "done" {
		t.Fatalf("client saw %v", err)
	}
}

// lastArrivalAt returns a function that reports when the last datagram
// to addr arrived (virtual time), for links of the given delay.
func (s *sim) lastArrivalAt(addr netip.AddrPort, delay time.Duration) func() time.Time {
	var mu sync.Mutex
	var last time.Time
	s.tap(func(p *simnet.Packet) bool {
		if p.To == addr {
			mu.Lock()
			last = time.Now().Add(delay)
			mu.Unlock()
		}
		return true
	})
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// TestIdleTimeout: with quic-go's server and ours, an idle connection
// closes with IdleTimeoutError exactly the idle timeout after the last
// datagram arrived, on both sides.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	t.Run("quic-go", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			ctx := s.ctx()
			ln, err := (&quicgo.Transport{Conn: s.socket(simServerAddr).Conn}).Listen(serverTLS(t), &quicgo.Config{MaxIdleTimeout: idle})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			lastIn := s.lastArrivalAt(simClientAddr(1), simLink.Delay)
			c := s.dial(simClientAddr(1), ln.Addr(), &Config{MaxIdleTimeout: idle})
			sc, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.AcceptStream(ctx)
			checkIdleTimeout(t, c, err, lastIn(), idle)
			_, err = sc.AcceptStream(ctx)
			var qie *quicgo.IdleTimeoutError
			if !errors.As(err, &qie) {
				t.Fatalf("quic-go got %v", err)
			}
		})
	})
	t.Run("ours", func(t *testing.T) {
		simTest(t, simLink, func(t *testing.T, s *sim) {
			ctx := s.ctx()
			srv := s.server(nil, &Config{MaxIdleTimeout: idle})
			lastIn := s.lastArrivalAt(simClientAddr(1), simLink.Delay)
			lastOut := s.lastArrivalAt(simServerAddr, simLink.Delay)
			c := s.dial(simClientAddr(1), srv.addr, &Config{MaxIdleTimeout: 10 * idle})
			sc := srv.next(t, ctx)
			serverClosed := make(chan struct{})
			context.AfterFunc(sc.Context(), func() {
				checkIdleTimeout(t, sc, context.Cause(sc.Context()), lastOut(), idle)
				close(serverClosed)
			})
			_, err := c.AcceptStream(ctx)
			checkIdleTimeout(t, c, err, lastIn(), idle)
			<-serverClosed
		})
	})
}

// checkIdleTimeout checks that err, c's close error seen now, is an idle
// timeout the idle period after last: idle, or three PTOs if longer (RFC
// 9000 section 10.1).
func checkIdleTimeout(t *testing.T, c *Conn, err error, last time.Time, idle time.Duration) {
	t.Helper()
	var ie *IdleTimeoutError
	var ne net.Error
	if !errors.As(err, &ie) || !errors.Is(err, net.ErrClosed) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("got %v, want IdleTimeoutError, a net.Error timeout", err)
		return
	}
	c.mu.Lock()
	want := max(idle, 3*c.loss.pto())
	c.mu.Unlock()
	if got := time.Since(last); got != want {
		t.Errorf("closed %v after the last datagram arrived, want %v", got, want)
	}
}

// TestKeepAlivePreventsIdleTimeout: our client's keep-alive PINGs hold an
// idle connection open for many idle periods: each goes a keep-alive
// period after the last datagram sent or received, so the gaps between
// them are the period plus at most a round trip and the peer's ACK delay.
func TestKeepAlivePreventsIdleTimeout(t *testing.T) {
	const period = 100 * time.Millisecond
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, &Config{MaxIdleTimeout: 600 * time.Millisecond})
		ctls := clientTLS(t)
		frames := s.logFrames(simClientAddr(1), ctls)
		c := s.dialTLS(simClientAddr(1), srv.addr, ctls, &Config{KeepAlivePeriod: period})
		echoOurs(t, ctx, c, 10)
		time.Sleep(time.Second) // MTU probes and their ACKs are over
		idleFrom := time.Now()
		time.Sleep(10 * time.Second)
		var pings []time.Time
		for _, p := range frames.packets(t, c, true, defaultConnIDLength) {
			if p.at.Before(idleFrom) {
				continue
			}
			if !p.has(wire.FrameTypePing) {
				t.Fatalf("an idle client sent a packet without PING: %+v", p.frames)
			}
			pings = append(pings, p.at)
		}
		if len(pings) < 10 {
			t.Fatalf("the client sent %d PINGs in 10 s", len(pings))
		}
		maxGap := period + 2*simLink.Delay + wire.DefaultMaxAckDelay
		for i := 1; i < len(pings); i++ {
			if gap := pings[i].Sub(pings[i-1]); gap < period || gap > maxGap {
				t.Fatalf("keep-alive gap %v, want %v to %v", gap, period, maxGap)
			}
		}
		if err := context.Cause(srv.only(t).Context()); err != nil {
			t.Fatalf("the server's connection closed: %v", err)
		}
		echoOurs(t, ctx, c, 10)
	})
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		ctx := testCtx(t)
		ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		for range 3 {
			c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			ss, err := sc.AcceptStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ss.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			_ = c.CloseWithError(0, "")
		}
	}()
	// Goroutines wind down asynchronously: poll, with a hang guard.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnectionCloseRetransmission: while closing, the server answers the
// client's packets with its CONNECTION_CLOSE again, on the 1st, 2nd, 4th,
// 8th ... packet, and always the same datagram.
func TestConnectionCloseRetransmission(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, &Config{DisablePathMTUDiscovery: true, MaxIncomingStreams: 200})
		ctls := clientTLS(t)
		frames := s.logFrames(simClientAddr(1), ctls)
		c := s.dialTLS(simClientAddr(1), srv.addr, ctls, &Config{DisablePathMTUDiscovery: true})
		ctx := s.ctx()
		echoOurs(t, ctx, c, 10)
		sc := srv.only(t)
		time.Sleep(10 * time.Millisecond)
		closedAt := time.Now()
		var mu sync.Mutex
		var dropped [][]byte
		s.tap(func(p *simnet.Packet) bool {
			if p.From != simServerAddr {
				return true
			}
			mu.Lock()
			dropped = append(dropped, p.Data)
			mu.Unlock()
			return false
		})
		_ = sc.CloseWithError(1337, "closing")
		for range 100 {
			st, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Write([]byte("foobar")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Nanosecond) // one packet per write
		}
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if len(dropped) != 8 {
			t.Fatalf("the server sent %d datagrams while closing, want 8 (the close and 7 repeats)", len(dropped))
		}
		for _, d := range dropped[1:] {
			if !bytes.Equal(d, dropped[0]) {
				t.Fatal("a repeated CONNECTION_CLOSE differs from the first")
			}
		}
		n := 0
		for _, p := range frames.packets(t, c, false, defaultConnIDLength) {
			if p.at.Before(closedAt) {
				continue
			}
			n++
			if len(p.frames) != 1 || p.frames[0].Type != wire.FrameTypeConnectionCloseApp || p.frames[0].ErrorCode != 1337 || string(p.frames[0].Reason) != "closing" {
				t.Fatalf("the closing server sent %+v, want only CONNECTION_CLOSE 1337", p.frames)
			}
		}
		if n != len(dropped) {
			t.Fatalf("%d 1-RTT packets in the %d datagrams of the closing server", n, len(dropped))
		}
	})
}

// TestDialedConnLeavesNoGoroutines: the connection of Dial, whose Transport
// the application cannot close, leaves no goroutine once it closed, by our
// side or the peer's: its read loop and event loop used to stay for the
// closing period, so a synctest bubble ending then deadlocked.
func TestDialedConnLeavesNoGoroutines(t *testing.T) {
	for _, closer := range []string{"client", "server"} {
		t.Run(closer, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				ctx := s.ctx()
				srv := s.server(nil, nil)
				sock, err := s.net.Listen(simClientAddr(1))
				if err != nil {
					t.Fatal(err)
				}
				c, err := Dial(ctx, simSocket{sock}, srv.addr, clientTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				echoOurs(t, ctx, c, 10)
				if closer == "client" {
					_ = c.CloseWithError(0, "")
				} else {
					_ = srv.only(t).CloseWithError(0, "")
					<-c.Context().Done()
				}
				synctest.Wait()
				for _, f := range []string{fmt.Sprintf("quic.(*Conn).run(%p", c), fmt.Sprintf("quic.(*Transport).readLoop(%p", c.t)} {
					if left := bubbleGoroutines(f); len(left) > 0 {
						t.Errorf("left after the connection closed:\n%s", left[0])
					}
				}
				sock.Close() // lets the bubble end if the test failed
			})
		})
	}
}

// TestCloseBeforeConfirmationKeepsApplicationCode: a server that closes
// with an application error before it has the client's Finished sends the
// close three ways in one datagram, as a bare APPLICATION_ERROR in Initial
// and Handshake and with its code in 1-RTT. The client reads on past the
// bare ones and reports the code, as it would after confirmation.
func TestCloseBeforeConfirmationKeepsApplicationCode(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		tr := s.transport(simServerAddr)
		ln, err := tr.ListenEarly(serverTLS(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		client := simClientAddr(1)
		// The server never gets the client's Finished, so it stays
		// unconfirmed (and keeps its Initial keys too).
		s.tap(func(p *simnet.Packet) bool {
			return p.From != client || !hasPacketOtherThanInitial(p.Data)
		})
		ctx := s.ctx()
		accepted := make(chan *Conn, 1)
		go func() {
			sc, err := ln.Accept(ctx)
			if err == nil {
				accepted <- sc
			}
			close(accepted)
		}()
		c := s.dial(client, ln.Addr(), nil)
		sc := <-accepted
		if sc == nil {
			t.Fatal("the server accepted nothing")
		}
		select {
		case <-sc.HandshakeComplete():
			t.Fatal("the server completed its handshake; the test needs it unconfirmed")
		default:
		}
		_ = sc.CloseWithError(0x100, "idle")
		<-c.Context().Done()
		var ae *ApplicationError
		if err := context.Cause(c.Context()); !errors.As(err, &ae) || !ae.Remote || ae.ErrorCode != 0x100 || ae.ErrorMessage != "idle" {
			t.Fatalf("the client saw %v, want the server's application error 0x100 idle", err)
		}
	})
}

// hasPacketOtherThanInitial reports whether datagram d holds a Handshake,
// 0-RTT or 1-RTT packet.
func hasPacketOtherThanInitial(d []byte) bool {
	for len(d) > 0 {
		if !wire.IsLongHeader(d[0]) {
			return true
		}
		var hdr wire.LongHeader
		if wire.ParseLongHeader(d, &hdr) != nil {
			return false
		}
		if hdr.Type != wire.PacketTypeInitial {
			return true
		}
		d = d[hdr.PacketLen:]
	}
	return false
}
