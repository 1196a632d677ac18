package quic

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// TestPackerAcksAfterMaxAckDelay: a lone ack-eliciting packet is
// acknowledged within max_ack_delay, not at once (RFC 9000 section
// 13.2.1).
func TestPackerAcksAfterMaxAckDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.acceptFrames(wire.FrameTypeAck)
		tc.writeFrames(spaceApp, wire.Frame{Type: wire.FrameTypePing})
		tc.wantNoFrame("one PING is not acknowledged at once")
		d := tc.advanceToTimer()
		if d != 25*time.Millisecond {
			t.Errorf("ACK after %v, want 25ms", d)
		}
		f := tc.wantFrameType("the ACK is due", wire.FrameTypeAck)
		t.Logf("%v", describeFrame(&f.Frame))
	})
}
