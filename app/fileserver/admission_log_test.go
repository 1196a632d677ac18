package fileserver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/turboretry/turboretry/quic"
)

// TestTopRefusedPrefixesMerged: the workers' lists add up per prefix,
// most refused first, cut to n; untracked prefixes show as "other".
func TestTopRefusedPrefixesMerged(t *testing.T) {
	p := netip.MustParsePrefix
	a := []quic.PrefixRefusals{{Prefix: p("100.64.1.0/24"), Refused: 70}, {Prefix: p("198.51.100.0/24"), Refused: 5}}
	b := []quic.PrefixRefusals{{Prefix: p("100.64.1.0/24"), Refused: 30}, {Refused: 40}, {Prefix: p("2001:db8::/56"), Refused: 1}}
	top := topRefusedPrefixes([][]quic.PrefixRefusals{a, b}, 3)
	if got, want := formatPrefixRefusals(top), "100.64.1.0/24=100 other=40 198.51.100.0/24=5"; got != want {
		t.Fatalf("merged top %q, want %q", got, want)
	}
	if got := topRefusedPrefixes(nil, 8); len(got) != 0 {
		t.Fatalf("no lists: %v", got)
	}
}

// TestRefusedPrefixLoggerQuiet: without refusals the logger says nothing
// (no listener: no admission, no top list).
func TestRefusedPrefixLoggerQuiet(t *testing.T) {
	var buf bytes.Buffer
	l := refusedPrefixLogger{log: slog.New(slog.NewTextHandler(&buf, nil))}
	l.check([]*quic.Transport{{}})
	if strings.Contains(buf.String(), "refused") {
		t.Fatalf("logged %q", buf.String())
	}
}

// TestServePrefixRateLogged: with a prefix rate that never refills, a
// second HTTP/3 connection from loopback is refused with
// CONNECTION_REFUSED, and the log line names 127.0.0.0/24, once.
func TestServePrefixRateLogged(t *testing.T) {
	lim := DefaultLimits()
	lim.PrefixRate, lim.PrefixBurst = 0.001, 1
	ts := startServer(t, func(c *Config) { c.Limits, c.Workers = &lim, 1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a broken build only
	defer cancel()
	addr := strings.TrimSuffix(strings.TrimPrefix(ts.URL(), "https://"), "/")
	tlsConf := ts.h3TLS()
	tlsConf.NextProtos = []string{"h3"}
	c, err := quicgo.DialAddr(ctx, addr, tlsConf, &quicgo.Config{})
	if err != nil {
		t.Fatalf("first connection: %v", err)
	}
	c.CloseWithError(0, "")
	_, err = quicgo.DialAddr(ctx, addr, tlsConf, &quicgo.Config{})
	var te *quicgo.TransportError
	if !errors.As(err, &te) || te.ErrorCode != quicgo.ConnectionRefused || !te.Remote {
		t.Fatalf("second connection: %v, want CONNECTION_REFUSED from the server", err)
	}
	var buf bytes.Buffer
	l := refusedPrefixLogger{log: slog.New(slog.NewTextHandler(&buf, nil))}
	l.check(ts.h3.transports())
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), `prefixes="127.0.0.0/24=`) {
		t.Fatalf("log %q, want a WARN naming 127.0.0.0/24", buf.String())
	}
	buf.Reset()
	l.check(ts.h3.transports())
	if buf.Len() != 0 {
		t.Fatalf("logged again without new refusals: %q", buf.String())
	}
	if st := ts.h3.transportStats(); st.Refused["prefix_rate"] == 0 || st.Prefixes != 1 {
		t.Fatalf("stats: refused %v, %d prefixes tracked", st.Refused, st.Prefixes)
	}
}
