package fileserver

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

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
