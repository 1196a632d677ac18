package qlogwriter

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic/quictype"
)

type testEvent struct {
	n   int
	bad bool
}

func (e testEvent) Name() string { return "test:event" }

func (e testEvent) Encode(enc *jsontext.Encoder, _ time.Time) error {
	if e.bad {
		return errors.New("cannot encode")
	}
	for _, t := range []jsontext.Token{jsontext.BeginObject, jsontext.String("n"), jsontext.Int(int64(e.n)), jsontext.EndObject} {
		if err := enc.WriteToken(t); err != nil {
			return err
		}
	}
	return nil
}

type closingBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

func (b *closingBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *closingBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// records splits a JSON-SEQ stream (RFC 7464) and parses each record.
func records(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, r := range bytes.Split(b, []byte{RecordSeparator}) {
		if i == 0 {
			if len(r) != 0 {
				t.Fatalf("data before the first record separator: %q", r)
			}
			continue
		}
		if !bytes.HasSuffix(r, []byte("\n")) {
			t.Fatalf("record %d does not end with a line feed: %q", i, r)
		}
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatalf("record %d is not JSON: %v: %q", i, err, r)
		}
		out = append(out, m)
	}
	return out
}

func TestFileSeqWritesJSONSeq(t *testing.T) {
	w := &closingBuffer{}
	odcid := quictype.ConnectionIDFromBytes([]byte{1, 2, 3, 4})
	fs := NewConnectionFileSeq(w, true, odcid)
	done := make(chan struct{})
	go func() { fs.Run(); close(done) }()
	a, b := fs.AddProducer(), fs.AddProducer()
	for i := range 300 { // more than the queue holds: the recorder waits for Run
		a.RecordEvent(testEvent{n: i})
	}
	b.RecordEvent(testEvent{n: 1000})
	_ = a.Close()
	if w.closed {
		t.Fatal("closed with a producer left")
	}
	_ = b.Close() // waits for Run to write everything
	<-done
	if !w.closed {
		t.Fatal("writer not closed after the last producer")
	}
	if fs.AddProducer() != nil {
		t.Fatal("a producer added to an ended trace")
	}
	recs := records(t, w.buf.Bytes())
	if len(recs) != 302 {
		t.Fatalf("%d records, want the header and 301 events", len(recs))
	}
	h := recs[0]
	trace := h["trace"].(map[string]any)
	if h["qlog_format"] != "JSON-SEQ" || h["qlog_version"] != "0.3" ||
		trace["vantage_point"].(map[string]any)["type"] != "client" ||
		trace["common_fields"].(map[string]any)["group_id"] != "01020304" {
		t.Fatalf("header %v", h)
	}
	for i, r := range recs[1:301] {
		if r["name"] != "test:event" || r["data"].(map[string]any)["n"] != float64(i) {
			t.Fatalf("event %d: %v", i, r)
		}
		if _, ok := r["time"].(float64); !ok {
			t.Fatalf("event %d without time: %v", i, r)
		}
	}
}

// TestFileSeqRunAfterClose: the last Close before Run started writes the
// trace and closes the writer itself; Run then has nothing to do.
func TestFileSeqRunAfterClose(t *testing.T) {
	w := &closingBuffer{}
	fs := NewFileSeq(w)
	r := fs.AddProducer()
	r.RecordEvent(testEvent{n: 7})
	_ = r.Close()
	if !w.closed {
		t.Fatal("the writer is not closed when the last Close returned")
	}
	fs.Run()
	recs := records(t, w.buf.Bytes())
	if !w.closed || len(recs) != 2 || recs[0]["trace"].(map[string]any)["vantage_point"].(map[string]any)["type"] != "transport" {
		t.Fatalf("closed %v, records %v", w.closed, recs)
	}
	if _, ok := recs[0]["trace"].(map[string]any)["common_fields"].(map[string]any)["group_id"]; ok {
		t.Fatal("a transport trace has no group ID")
	}
}

// An event that fails to encode ends the trace's output, nothing else: the
// writer is still closed at the end and recorders do not block.
func TestFileSeqEncodeError(t *testing.T) {
	w := &closingBuffer{}
	fs := NewFileSeq(w)
	done := make(chan struct{})
	go func() { fs.Run(); close(done) }()
	r := fs.AddProducer()
	r.RecordEvent(testEvent{n: 1})
	r.RecordEvent(testEvent{bad: true})
	for i := range 1000 {
		r.RecordEvent(testEvent{n: i})
	}
	_ = r.Close()
	<-done
	if !w.closed {
		t.Fatal("writer not closed")
	}
	if strings.Count(w.buf.String(), "test:event") > 2 {
		t.Fatal("events written after the failing one")
	}
}

func TestRegisterEventSchema(t *testing.T) {
	RegisterEventSchema("urn:test:a")
	RegisterEventSchema("urn:test:a")
	n := 0
	for _, s := range registeredSchemas() {
		if s == "urn:test:a" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("schema registered %d times", n)
	}
}
