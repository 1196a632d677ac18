package quic

import (
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/qlog"
)

// TestTraceECNNames: the tracer writes a codepoint as qlog.ECN(e.String()),
// so the names of protocol.ECN must be qlog's.
func TestTraceECNNames(t *testing.T) {
	for e, want := range map[protocol.ECN]qlog.ECN{
		protocol.ECNNotECT: qlog.ECTNot,
		protocol.ECNECT0:   qlog.ECT0,
		protocol.ECNECT1:   qlog.ECT1,
		protocol.ECNCE:     qlog.ECNCE,
	} {
		if got := qlog.ECN(e.String()); got != want {
			t.Errorf("codepoint %02b traced as %q, want %q", uint8(e), got, want)
		}
	}
}
