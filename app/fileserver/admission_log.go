package fileserver

import (
	"cmp"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// refusedPrefixLogInterval is how often, at most, the log names the
// client source prefixes refused most: one line per interval while
// refusals grow, however fast an attack makes them.
const refusedPrefixLogInterval = 30 * time.Second

// topRefusedPrefixes merges the workers' lists of the prefixes refused
// most (each worker's admission counts its own) into one, most first, at
// most n long.
func topRefusedPrefixes(lists [][]quic.PrefixRefusals, n int) []quic.PrefixRefusals {
	sum := map[netip.Prefix]uint64{}
	for _, l := range lists {
		for _, p := range l {
			sum[p.Prefix] += p.Refused
		}
	}
	out := make([]quic.PrefixRefusals, 0, len(sum))
	for p, v := range sum {
		out = append(out, quic.PrefixRefusals{Prefix: p, Refused: v})
	}
	slices.SortFunc(out, func(a, b quic.PrefixRefusals) int {
		if c := cmp.Compare(b.Refused, a.Refused); c != 0 {
			return c
		}
		return cmp.Compare(a.Prefix.String(), b.Prefix.String())
	})
	return out[:min(n, len(out))]
}

// formatPrefixRefusals writes "100.64.1.0/24=1170 198.51.100.0/24=80";
// the prefixes not tracked on their own are "other".
func formatPrefixRefusals(top []quic.PrefixRefusals) string {
	var b strings.Builder
	for i, p := range top {
		if i > 0 {
			b.WriteByte(' ')
		}
		if p.Prefix.IsValid() {
			b.WriteString(p.Prefix.String())
		} else {
			b.WriteString("other")
		}
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(p.Refused, 10))
	}
	return b.String()
}

// refusedPrefixLogger logs the prefixes refused most when connection
// attempts were refused since its last line.
type refusedPrefixLogger struct {
	log  *slog.Logger
	last uint64 // the refusals counted at the last line
}

// check logs a line if the Transports refused attempts since the last.
func (l *refusedPrefixLogger) check(trs []*quic.Transport) {
	lists := make([][]quic.PrefixRefusals, 0, len(trs))
	var total uint64
	for _, tr := range trs {
		st := tr.Stats()
		lists = append(lists, st.TopRefusedPrefixes)
		for _, v := range st.Refused {
			total += v
		}
	}
	top := topRefusedPrefixes(lists, 8)
	if total <= l.last || len(top) == 0 {
		return
	}
	l.log.Warn("QUIC connection attempts refused; the source prefixes refused most",
		"prefixes", formatPrefixRefusals(top), "refused_since_last", total-l.last)
	l.last = total
}

// logRefusedPrefixes runs a refusedPrefixLogger over trs every interval
// until the returned stop is called.
func logRefusedPrefixes(log *slog.Logger, trs []*quic.Transport, every time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		l := refusedPrefixLogger{log: log}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				l.check(trs)
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}
