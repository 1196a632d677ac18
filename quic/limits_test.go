package quic

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/turboretry/turboretry/internal/wire"
)

// wantRefused checks that a dial failed with the server's
// CONNECTION_REFUSED, whichever stack dialed.
func wantRefused(t *testing.T, who string, err error) {
	t.Helper()
	var ours *TransportError
	var theirs *quicgo.TransportError
	switch {
	case errors.As(err, &ours) && ours.Remote && ours.ErrorCode == ConnectionRefused:
	case errors.As(err, &theirs) && theirs.Remote && theirs.ErrorCode == quicgo.ConnectionRefused:
	default:
		t.Fatalf("%s: dial error %v, want the server's CONNECTION_REFUSED", who, err)
	}
}

// dialBoth dials the server with our client and quic-go's and returns
// their errors (nil: the handshake and an echo completed).
func dialBoth(t *testing.T, ctx context.Context, addr string) (ours, theirs error) {
	t.Helper()
	if c, err := DialAddr(ctx, addr, clientTLS(t), nil); err != nil {
		ours = err
	} else {
		ours = echoErr(ctx, c, c.OpenStreamSync, 4<<10)
		_ = c.CloseWithError(0, "")
	}
	if c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), nil); err != nil {
		theirs = err
	} else {
		theirs = echoErr(ctx, c, c.OpenStreamSync, 4<<10)
		_ = c.CloseWithError(0, "")
	}
	return ours, theirs
}

// TestConnectionCap pushes past Config.MaxConnections: 100 idle
// connections from one cheap client socket fill the cap, then 1000
// complete Initials with fresh connection IDs each get a stateless
// CONNECTION_REFUSED (no Retry, no state: a Retry would only cost the
// client a round trip before the same refusal), as do our client and
// quic-go's. The server stays at 100 connections; once some idle ones
// leave, both benign clients complete.
func TestConnectionCap(t *testing.T) {
	const limit, flood = 100, 1000
	ctx := testCtx(t)
	pkts, dcids := floodInitials(t, flood)
	heapBefore := heapInUse()
	tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{}}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), &Config{MaxConnections: limit, MaxIdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	serveStreams(ctx, ln.Accept, func(s *Stream) { echo(s) })
	addr := ln.Addr().String()

	client := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { client.Close() })
	idle := make([]*Conn, limit)
	for i := range idle {
		if idle[i], err = client.Dial(ctx, ln.Addr(), clientTLS(t), &Config{MaxIdleTimeout: time.Minute}); err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
	}
	waitFor(t, "the idle connections' handshakes done", func() bool { return tr.Stats().Handshaking == 0 })

	attacker := listenUDP(t)
	answers := readFloodAnswers(attacker, dcids)
	sendFlood(t, attacker, ln.Addr(), pkts, answers)
	ours, theirs := dialBoth(t, ctx, addr)
	wantRefused(t, "our client at the cap", ours)
	wantRefused(t, "quic-go's client at the cap", theirs)

	st := tr.Stats()
	grown := int64(heapInUse()) - int64(heapBefore)
	t.Logf("cap %d, %d attempts past it: heap +%d KiB (both sides), %+v", limit, flood, grown>>10, st)
	if refused := answers.countOf(answerClose); refused != flood {
		t.Errorf("%d of %d Initials past the cap refused", refused, flood)
	}
	for i, k := range answers.kinds {
		if k == answerClose && answers.closes[i] != ConnectionRefused {
			t.Fatalf("Initial %d closed with %v, want CONNECTION_REFUSED", i, answers.closes[i])
		}
	}
	// A client's ClientHello with a post-quantum key share fills two
	// Initials: each is refused.
	if st.Connections != limit || st.Refused[RefusedConnectionCap.String()] < flood+2 {
		t.Errorf("%d connections, refusals %v: want %d and at least %d connection_cap", st.Connections, st.Refused, limit, flood+2)
	}
	if av := tr.AddressValidationStats(); av.RetriesSent != 0 {
		t.Errorf("%d Retries sent at the cap, want refusals only", av.RetriesSent)
	}
	if grown > 32<<20 {
		t.Errorf("heap grew by %d MiB", grown>>20)
	}

	for _, c := range idle[:10] {
		_ = c.CloseWithError(0, "")
	}
	waitFor(t, "slots freed by closed connections", func() bool { return tr.Stats().Connections <= limit-10 })
	if ours, theirs := dialBoth(t, ctx, addr); ours != nil || theirs != nil {
		t.Fatalf("benign clients below the cap: ours %v, quic-go's %v", ours, theirs)
	}
}

// TestAcceptBacklogRefusesBeforeHandshake: with AcceptBacklog
// connections waiting for an Accept that does not come, the next client is
// refused at its first Initial (no handshake paid for); once the
// application accepts one, the next client gets in.
func TestAcceptBacklogRefusesBeforeHandshake(t *testing.T) {
	const backlog = 4
	ctx := testCtx(t)
	tr := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), &Config{AcceptBacklog: backlog})
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	for i := range backlog {
		c, err := DialAddr(ctx, addr, clientTLS(t), nil)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		t.Cleanup(func() { c.CloseWithError(0, "") })
		waitFor(t, "the connection queued for Accept", func() bool { return tr.Stats().AcceptQueue == i+1 })
	}
	_, err = quicgo.DialAddr(ctx, addr, clientTLS(t), nil)
	wantRefused(t, "quic-go's client with the backlog full", err)
	_, err = DialAddr(ctx, addr, clientTLS(t), nil)
	wantRefused(t, "our client with the backlog full", err)
	st := tr.Stats()
	if st.Refused[RefusedBacklogFull.String()] < 2 || st.Connections != backlog || st.Refused[RefusedAcceptQueueFull.String()] != 0 {
		t.Fatalf("after two clients over the backlog: %+v", st)
	}
	if _, err := ln.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatalf("client after an Accept: %v", err)
	}
	_ = c.CloseWithError(0, "")
}

// TestHandshakeSlotsFull: without address validation nothing stops a
// flood of complete Initials but the handshake slots: past
// Config.MaxHandshakes each is refused statelessly and counted, the
// connections in the handshake stay at the limit.
func TestHandshakeSlotsFull(t *testing.T) {
	const slots, flood = 8, 100
	pkts, dcids := floodInitials(t, flood)
	tr := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Listen(serverTLS(t), &Config{MaxHandshakes: slots, HandshakeIdleTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	attacker := listenUDP(t)
	answers := readFloodAnswers(attacker, dcids)
	sendFlood(t, attacker, tr.Conn.LocalAddr(), pkts, answers)
	st := tr.Stats()
	if conns, refused := answers.countOf(answerHandshake), answers.countOf(answerClose); conns != slots || refused != flood-slots {
		t.Errorf("%d connections, %d refused, want %d and %d", conns, refused, slots, flood-slots)
	}
	if st.Handshaking != slots || st.Refused[RefusedHandshakeSlots.String()] != flood-slots {
		t.Errorf("stats %+v", st)
	}
}

// TestReceiveBudgetHoldsWindows: windows that would grow (a reader fast
// against a long RTT) keep their size while the Transport's unread data
// is over Transport.MaxReceiveBuffer, and grow when it is not.
func TestReceiveBudgetHoldsWindows(t *testing.T) {
	for _, held := range []bool{false, true} {
		c := newOfflineConn(t)
		if held {
			c.t.maxRecvBuf = 0
		}
		now := time.Now()
		c.loss.rec.RTT().Update(time.Second, 0, true, now)
		buf := make([]byte, 1000)
		var off uint64
		for range 8 {
			c.mu.Lock()
			c.processPayload(spaceApp, wire.PacketType1RTT, off/1000, wire.AppendStreamFrame(nil, 0, off, buf, false, true), now)
			c.mu.Unlock()
			off += uint64(len(buf))
			if n, err := c.streams.all[0].read(buf); n != len(buf) || err != nil {
				t.Fatalf("read %d, %v", n, err)
			}
			now = now.Add(10 * time.Millisecond)
			c.mu.Lock()
			c.appendControlFrames(make([]byte, 0, 1200), 1200, now, c.getSentPacket(spaceApp))
			grown := c.streams.all[0].fcRecv.Window() > 1000
			closeErr := c.close.err
			c.mu.Unlock()
			if closeErr != nil {
				t.Fatal(closeErr)
			}
			if grown && held {
				t.Fatal("stream window grew past the receive budget")
			}
			if grown {
				break
			}
		}
		if !held && c.streams.all[0].fcRecv.Window() == 1000 {
			t.Fatal("stream window never grew under the budget")
		}
	}
}

// captureLog sends slog's default logger to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// TestRecoveredPanicCounted: a panic inside a connection's goroutine
// closes that connection with INTERNAL_ERROR, one in the receive loop
// costs the datagram; both are logged at ERROR with the stack and counted.
func TestRecoveredPanicCounted(t *testing.T) {
	logged := captureLog(t)
	c := newOfflineConn(t)
	c.mu.Lock()
	c.guard(func() { panic("test panic in a connection") })
	closeErr := c.close.err
	c.mu.Unlock()
	var te *TransportError
	if !errors.As(closeErr, &te) || te.ErrorCode != InternalError {
		t.Fatalf("close error %v, want INTERNAL_ERROR", closeErr)
	}
	// A listener without a configuration makes routing an Initial panic.
	tr := c.t
	tr.mu.Lock()
	tr.server = &baseServer{t: tr}
	tr.mu.Unlock()
	pkt := buildClientInitial(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9}, nil, 1200)
	tr.handleDatagram(receivedPacket{buf: getBuffer(), data: pkt, remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}})
	st := tr.Stats()
	if st.PanicsRecovered != 2 || st.DatagramsDropped[DropPanic.String()] != 1 {
		t.Fatalf("stats after two panics: %+v", st)
	}
	out := logged.String()
	for _, want := range []string{"level=ERROR", "test panic in a connection", "where=receive", "runtime/debug.Stack"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	tr.mu.Lock()
	tr.server = nil
	tr.mu.Unlock()
}
