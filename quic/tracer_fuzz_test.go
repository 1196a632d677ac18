package quic

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/qlogwriter/jsontext"
)

// encodeTraceEvent returns ev's data as qlogwriter writes it.
func encodeTraceEvent(t testing.TB, ev qlogwriter.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := ev.Encode(jsontext.NewEncoder(&buf), time.Time{}); err != nil {
		t.Fatalf("%s: %v", ev.Name(), err)
	}
	return buf.Bytes()
}

// FuzzTraceFrames feeds arbitrary packet payloads to the tracer's frame
// conversion: the packet_sent record must always be valid JSON, each
// frame with its type.
func FuzzTraceFrames(f *testing.F) {
	f.Add([]byte{0x01, 0x00, 0x00})
	f.Add(wire.AppendAckFrame(nil, []wire.AckRange{{Smallest: 7, Largest: 9}, {Smallest: 1, Largest: 3}}, 100))
	f.Add(wire.AppendStreamFrame(nil, 4, 1000, []byte("data"), true, true))
	f.Add(wire.AppendConnectionCloseFrame(nil, false, 0x0a, 0x08, []byte("bad \xff\"frame\"\n")))
	f.Add(wire.AppendCryptoFrame([]byte{0x1e}, 5, []byte("hello")))
	f.Fuzz(func(t *testing.T, payload []byte) {
		tr := &connTracer{}
		ev := qlog.PacketSent{
			Header: qlog.PacketHeader{PacketType: qlog.PacketType1RTT},
			Frames: tr.frames(payload, 3, qlog.PacketType1RTT),
		}
		b := encodeTraceEvent(t, ev)
		var v struct {
			Frames []map[string]any `json:"frames"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("invalid JSON for %x: %v: %s", payload, err, b)
		}
		for _, fr := range v.Frames {
			if _, ok := fr["frame_type"].(string); !ok {
				t.Fatalf("frame without frame_type: %s", b)
			}
		}
	})
}
