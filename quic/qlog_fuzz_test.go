package quic

import (
	"encoding/json"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

// FuzzQlogFrames feeds arbitrary packet payloads to the frame logger: the
// record must always be valid JSON with a frames list.
func FuzzQlogFrames(f *testing.F) {
	f.Add([]byte{0x01, 0x00, 0x00})
	f.Add(wire.AppendAckFrame(nil, []wire.AckRange{{Smallest: 7, Largest: 9}, {Smallest: 1, Largest: 3}}, 100))
	f.Add(wire.AppendStreamFrame(nil, 4, 1000, []byte("data"), true, true))
	f.Add(wire.AppendConnectionCloseFrame(nil, false, 0x0a, 0x08, []byte("bad \xff\"frame\"\n")))
	f.Add(wire.AppendCryptoFrame([]byte{0x1e}, 5, []byte("hello")))
	f.Fuzz(func(t *testing.T, payload []byte) {
		q := &qlogger{}
		b := q.appendFrames([]byte("{"), payload, 3)
		b = append(b, '}')
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

// FuzzQlogJSONString checks that any string round-trips through the JSON
// string appender, invalid UTF-8 becoming U+FFFD per byte.
func FuzzQlogJSONString(f *testing.F) {
	f.Add("plain")
	f.Add("q\"\\\x00\x7f\n")
	f.Add("bad \xff\xe2\x82 ok ✓")
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q: %v: %s", s, err, b)
		}
		if want := string([]rune(s)); got != want {
			t.Fatalf("%q: got %q, want %q", s, got, want)
		}
	})
}
