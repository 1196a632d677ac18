//go:build linux

package abuse

import (
	"context"
	"errors"
	"io"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/testutil"
)

// dialH3 opens a raw QUIC connection with the h3 ALPN from quic-go (an
// independent stack) and sends the control stream's SETTINGS (empty), as
// an HTTP/3 client does before its requests.
func dialH3(ctx context.Context, t *testing.T, s *server, conf *quicgo.Config) *quicgo.Conn {
	t.Helper()
	c, err := quicgo.DialAddr(ctx, s.addr, s.clientTLS("h3"), conf)
	if err != nil {
		t.Fatalf("dialing the server: %v", err)
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	ctrl, err := c.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	// Stream type 0x00 (control), SETTINGS (0x04) of length 0.
	if _, err := ctrl.Write([]byte{0x00, 0x04, 0x00}); err != nil {
		t.Fatal(err)
	}
	return c
}

// declaredHeadersAttack opens conns raw HTTP/3 connections of streams
// request streams each; every stream sends the header of a HEADERS frame
// declaring declared bytes and sent bytes of its payload, then nothing.
func declaredHeadersAttack(ctx context.Context, t *testing.T, s *server, conns, streams, declared, sent int) []*quicgo.Stream {
	t.Helper()
	frame := quicvarint.Append(nil, 0x01) // HEADERS
	frame = quicvarint.Append(frame, uint64(declared))
	frame = append(frame, make([]byte, sent)...)
	var held []*quicgo.Stream
	for range conns {
		c := dialH3(ctx, t, s, nil)
		for range streams {
			str, err := c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := str.Write(frame); err != nil {
				t.Fatal(err)
			}
			held = append(held, str)
		}
	}
	return held
}

// TestDeclaredHeaders is issue 11's third attack: 8 connections x 100
// request streams, each sending a HEADERS frame header that declares
// 1 MiB and 500 bytes of it, then nothing. Before, every stream allocated
// the declared 1 MiB (945 MB RSS).
//
// With serve's defaults (--max-header-bytes 64 KiB) each stream is
// answered at once with 431 and nothing is read. With the library's
// limits (--max-header-bytes 1 MiB, --conn-header-bytes 2 MiB, what issue
// 11 measured), payloads are read as they arrive within the per-connection
// header budget: once the server is quiet its resident memory must stay
// under 300 MB, the whole budget must be reserved and a benign fetch must
// complete (LibraryLimits, with no header timeout, so that no reset can
// come before those checks however slow the attack is); and
// ReadHeaderTimeout (10 s) must end every stream the attack holds
// (H3_REQUEST_INCOMPLETE, or H3_REQUEST_REJECTED for those still waiting
// for the budget), after which the server's goroutines are back to a
// handful per connection (LibraryLimitsHeaderTimeout, on a second server
// with the default timeout).
func TestDeclaredHeaders(t *testing.T) {
	t.Parallel()
	const (
		conns    = 8
		streams  = 100
		declared = 1 << 20
		sent     = 500
		n        = conns * streams
	)
	t.Run("ServeDefaults", func(t *testing.T) {
		t.Parallel()
		s := startServer(t)
		ctx := ctxFor(t)
		baseRSS := s.rssMB()
		for _, str := range declaredHeadersAttack(ctx, t, s, conns, streams, declared, sent) {
			// The 431 response, then FIN.
			if _, err := io.Copy(io.Discard, str); err != nil {
				t.Fatalf("reading the answer to an oversized HEADERS frame: %v", err)
			}
		}
		m := s.scrape()
		checkBenign(t, benignFetches(ctx, s, "", nil))
		peakRSS := s.peakRSSMB()
		tooLarge := m[series(mH3Refused, "reason", "header_too_large")]
		t.Logf("%d HEADERS frames declaring %d bytes: %.0f answered 431 at once, peak RSS %.1f MB (%.1f at start)", n, declared, tooLarge, peakRSS, baseRSS)
		if tooLarge != n {
			t.Errorf("%.0f streams counted as header_too_large, want %d", tooLarge, n)
		}
		if peakRSS >= 300 {
			t.Errorf("peak RSS %.1f MB, want < 300 MB", peakRSS)
		}
		checkNoPanics(t, m)
	})
	t.Run("LibraryLimits", func(t *testing.T) {
		t.Parallel()
		// No header timeout: the checks below need the streams held, and
		// with serve's 10 s the first connection's streams were reset if
		// the attack and waitQuiet took longer on a loaded machine.
		s := startServer(t, "--max-header-bytes", "1MiB", "--conn-header-bytes", "2MiB", "--header-timeout", "0")
		ctx := ctxFor(t)
		baseRSS := s.rssMB()
		declaredHeadersAttack(ctx, t, s, conns, streams, declared, sent)
		waitQuiet(t, s)
		// The attack's writes return once quic-go has queued them, so the
		// last streams can reach the server after it looked quiet: the
		// state measured below is every budget taken.
		testutil.WaitFor(t, "every connection's header budget to be reserved", func() bool {
			return s.scrape()[mHeaderBytes] >= float64(conns*2*declared)
		})
		rss, fds := s.rssMB(), s.fds()
		metrics := s.scrape()
		checkBenign(t, benignFetches(ctx, s, "", nil))
		peakRSS := s.peakRSSMB()
		t.Logf("%d streams holding a HEADERS frame declared as %d bytes (%d sent): RSS %.1f MB (peak %.1f, %.1f at start: %.1f KiB per stream), %.0f live connections, %.0f goroutines, %d fds, %.0f MiB of header budget reserved",
			n, declared, sent, rss, peakRSS, baseRSS, (peakRSS-baseRSS)*1024/float64(n), metrics[mConns], metrics[mGoroutines], fds, metrics[mHeaderBytes]/(1<<20))
		if peakRSS >= 300 {
			t.Errorf("peak RSS %.1f MB, want < 300 MB", peakRSS)
		}
		// Every connection's header budget is taken by two declared
		// sections; the other streams wait without a buffer.
		if want := float64(conns * 2 * declared); metrics[mHeaderBytes] != want {
			t.Errorf("%.0f header bytes reserved, want the %d connections' whole budgets, %.0f", metrics[mHeaderBytes], conns, want)
		}
		if g := metrics[mGoroutines]; g > float64(n+16*conns+100) {
			t.Errorf("%.0f goroutines for %d held streams, want at most one per stream and a few per connection", g, n)
		}
		checkNoPanics(t, metrics)
	})
	t.Run("LibraryLimitsHeaderTimeout", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, "--max-header-bytes", "1MiB", "--conn-header-bytes", "2MiB")
		ctx := ctxFor(t)
		held := declaredHeadersAttack(ctx, t, s, conns, streams, declared, sent)

		// ReadHeaderTimeout ends them all: each stream is reset.
		codes := map[http3.ErrCode]int{}
		for _, str := range held {
			_, err := io.Copy(io.Discard, str)
			var serr *quicgo.StreamError
			if !errors.As(err, &serr) || !serr.Remote {
				t.Fatalf("a held stream ended with %v, want a reset from the server", err)
			}
			codes[http3.ErrCode(serr.ErrorCode)]++
		}
		t.Logf("the server reset the held streams: %v", codes)
		if codes[http3.ErrCodeRequestIncomplete]+codes[http3.ErrCodeRequestRejected] != n {
			t.Errorf("reset codes %v, want H3_REQUEST_INCOMPLETE or H3_REQUEST_REJECTED for all %d", codes, n)
		}
		after := s.scrape()
		refused := after[series(mH3Refused, "reason", "header_timeout")] + after[series(mH3Refused, "reason", "header_budget")]
		t.Logf("after the resets: %.0f goroutines, %.0f streams counted as refused (header_timeout, header_budget), %.0f header bytes reserved",
			after[mGoroutines], refused, after[mHeaderBytes])
		if refused != n {
			t.Errorf("the server counted %.0f header refusals, want %d", refused, n)
		}
		if after[mHeaderBytes] != 0 {
			t.Errorf("%.0f header bytes still reserved after every stream was reset", after[mHeaderBytes])
		}
		if g := after[mGoroutines]; g > float64(100+16*conns) {
			t.Errorf("%.0f goroutines after every held stream was reset, want a handful per connection", g)
		}
		checkNoPanics(t, after)
	})
}
