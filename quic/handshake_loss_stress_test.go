package quic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestLossyHandshakesStress runs TestCorruptHandshakesQuicGoClientOurServer
// (with TR_LOSSY_STRESS_LOSS=1 the loss variant) over a range of
// impairment seeds, for failures that need a rare run of losses: set
// TR_LOSSY_STRESS=first-last (seeds), and TR_LOSSY_STRESS_RATE for another
// rate than 0.3. A failed connection's log lists the datagrams and, from
// the server's qlog, the packets the server sent and received with their
// frames.
func TestLossyHandshakesStress(t *testing.T) {
	spec := os.Getenv("TR_LOSSY_STRESS")
	if spec == "" {
		t.Skip("set TR_LOSSY_STRESS=first-last (seeds) to run")
	}
	var first, last uint64
	if _, err := fmt.Sscanf(spec, "%d-%d", &first, &last); err != nil {
		t.Fatalf("TR_LOSSY_STRESS=%q: %v", spec, err)
	}
	rate := 0.3
	if r := os.Getenv("TR_LOSSY_STRESS_RATE"); r != "" {
		if _, err := fmt.Sscanf(r, "%g", &rate); err != nil {
			t.Fatalf("TR_LOSSY_STRESS_RATE=%q: %v", r, err)
		}
	}
	corrupt := os.Getenv("TR_LOSSY_STRESS_LOSS") == ""
	for seed := first; seed <= last; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			lossyHandshakesQuicGoClient(t, seed, rate, corrupt, &serverQlogs{})
		})
	}
}

// serverQlogs keeps the qlog of each server connection, in the order they
// began.
type serverQlogs struct {
	mu   sync.Mutex
	logs []*lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) Close() error { return nil }

func (q *serverQlogs) open(Perspective, []byte) io.WriteCloser {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := &lockedBuffer{}
	q.logs = append(q.logs, b)
	return b
}

func (q *serverQlogs) count() int {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.logs)
}

// summary lists the packets sent and received, and those declared lost,
// by the connections that began after the first since: one line each,
// with the frame types (a STREAM frame with its offset and length).
func (q *serverQlogs) summary(since int) []string {
	q.mu.Lock()
	logs := q.logs[since:]
	q.mu.Unlock()
	var out []string
	for k, b := range logs {
		b.mu.Lock()
		raw := bytes.Clone(b.b.Bytes())
		b.mu.Unlock()
		for rec := range bytes.SplitSeq(raw, []byte{0x1e}) {
			var ev struct {
				Time float64 `json:"time"`
				Name string  `json:"name"`
				Data struct {
					Header struct {
						Type string `json:"packet_type"`
						PN   *int64 `json:"packet_number"`
					} `json:"header"`
					Raw struct {
						Length int `json:"length"`
					} `json:"raw"`
					Frames  []map[string]any `json:"frames"`
					Trigger string           `json:"trigger"`
				} `json:"data"`
			}
			if json.Unmarshal(bytes.TrimSpace(rec), &ev) != nil {
				continue
			}
			if !strings.Contains(ev.Name, "packet_") {
				continue
			}
			pn := int64(-1)
			if ev.Data.Header.PN != nil {
				pn = *ev.Data.Header.PN
			}
			var frames []string
			for _, f := range ev.Data.Frames {
				ft := fmt.Sprint(f["frame_type"])
				if ft == "stream" {
					ft = fmt.Sprintf("stream(%v@%v+%v fin=%v)", f["stream_id"], f["offset"], f["length"], f["fin"])
				}
				frames = append(frames, ft)
			}
			out = append(out, fmt.Sprintf("conn %d %.3fms %s %s pn=%d len=%d %s [%s]", since+k, ev.Time, ev.Name, ev.Data.Header.Type, pn, ev.Data.Raw.Length, ev.Data.Trigger, strings.Join(frames, " ")))
		}
	}
	return out
}
