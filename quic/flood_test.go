package quic

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// floodEchoServer runs a listener (an EarlyListener if early) with the
// default address validation (AutoRetry(DefaultRetryThreshold)) that
// echoes the first stream of every connection. Flood connections stay
// unvalidated for the whole test: the handshake timeout is far beyond it,
// so what the test counts does not depend on how fast a loaded machine
// runs it.
func floodEchoServer(t *testing.T, ctx context.Context, early bool, conf *Config) (*Transport, net.Addr) {
	t.Helper()
	tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{}}
	t.Cleanup(func() { tr.Close() })
	if conf == nil {
		conf = &Config{}
	}
	conf.HandshakeIdleTimeout = time.Minute
	if early {
		ln, err := tr.ListenEarly(serverTLS(t), conf)
		if err != nil {
			t.Fatal(err)
		}
		serveStreams(ctx, ln.Accept, func(s *Stream) { echo(s) })
	} else {
		ln, err := tr.Listen(serverTLS(t), conf)
		if err != nil {
			t.Fatal(err)
		}
		serveStreams(ctx, ln.Accept, func(s *Stream) { echo(s) })
	}
	return tr, tr.Conn.LocalAddr()
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestFloodCompleteInitials is issue 11's flood: complete one-datagram
// ClientHellos (our server would carry each to 0.5-RTT) with fresh
// connection IDs from one socket that never answers, against an
// EarlyListener (what the HTTP/3 server uses) and a Listener with the
// default policy. Each connection counts as
// unvalidated until a Handshake packet from its client decrypts, so after
// DefaultRetryThreshold+1 connections every further Initial gets a Retry,
// live state stays flat, and quic-go's client and ours, started in the
// middle of the flood, complete a handshake (through a Retry) and an echo.
func TestFloodCompleteInitials(t *testing.T) {
	t.Run("EarlyListener", func(t *testing.T) { testFloodCompleteInitials(t, true) })
	t.Run("Listener", func(t *testing.T) { testFloodCompleteInitials(t, false) })
}

func testFloodCompleteInitials(t *testing.T, early bool) {
	const flood = 1000
	ctx := testCtx(t)
	pkts, dcids := floodInitials(t, flood)
	heapBefore := heapInUse()
	tr, addr := floodEchoServer(t, ctx, early, nil)
	attacker := listenUDP(t)
	answers := readFloodAnswers(attacker, dcids)

	sendFlood(t, attacker, addr, pkts[:flood/4], answers)
	start := time.Now()
	benign := make(chan error, 2)
	go func() {
		c, err := DialAddr(ctx, addr.String(), clientTLS(t), nil)
		if err != nil {
			benign <- fmt.Errorf("our client: dial after %v: %w", time.Since(start), err)
			return
		}
		defer c.CloseWithError(0, "")
		if err := echoErr(ctx, c, c.OpenStreamSync, 10<<10); err != nil {
			benign <- fmt.Errorf("our client: echo after %v: %w", time.Since(start), err)
			return
		}
		benign <- nil
	}()
	go func() {
		c, err := quicgo.DialAddr(ctx, addr.String(), clientTLS(t), nil)
		if err != nil {
			benign <- fmt.Errorf("quic-go's client: dial after %v: %w", time.Since(start), err)
			return
		}
		defer c.CloseWithError(0, "")
		if err := echoErr(ctx, c, c.OpenStreamSync, 10<<10); err != nil {
			benign <- fmt.Errorf("quic-go's client: echo after %v: %w", time.Since(start), err)
			return
		}
		benign <- nil
	}()
	sendFlood(t, attacker, addr, pkts[flood/4:], answers)
	floodTook := time.Since(start)
	for range 2 {
		if err := <-benign; err != nil {
			// The flood's own pace says whether the server stalled: each
			// unanswered Initial holds the sender for a second.
			t.Fatalf("benign client during the flood: %v\n(the flood's last 3/4 took %v; %d connections, %d Retries, %d unanswered; server %+v)",
				err, floodTook, answers.countOf(answerHandshake), answers.countOf(answerRetry), answers.countOf(answerNone), tr.Stats())
		}
	}

	conns, retries := answers.countOf(answerHandshake), answers.countOf(answerRetry)
	st, av := tr.Stats(), tr.AddressValidationStats()
	t.Logf("flood of %d: %d connections, %d Retries, %d unanswered; server: %+v", flood, conns, retries, answers.countOf(answerNone), st)
	if conns > DefaultRetryThreshold+1 {
		t.Errorf("%d flood connections created, want at most %d (the threshold)", conns, DefaultRetryThreshold+1)
	}
	if past := flood - conns; retries*100 < past*95 {
		t.Errorf("%d of the %d Initials past the threshold answered with Retries, want >= 95%%", retries, past)
	}
	if st.Connections >= 200 || st.Unvalidated > DefaultRetryThreshold+1 {
		t.Errorf("%d live connections, %d unvalidated: not bounded", st.Connections, st.Unvalidated)
	}
	if av.TokensAccepted["host/retry"] != 2 {
		t.Errorf("benign clients validated by %v, want both by a host Retry", av.TokensAccepted)
	}
	// Every flood connection costs a goroutine pair and TLS state: the
	// heap stays at tens of them, not a thousand.
	if grown := int64(heapInUse()) - int64(heapBefore); grown > 32<<20 {
		t.Errorf("heap grew by %d MiB during the flood", grown>>20)
	}
}
