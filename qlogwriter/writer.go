// Package qlogwriter records qlog events (draft-ietf-quic-qlog-main-schema)
// and writes them as JSON Text Sequences (RFC 7464), with the API of
// quic-go's qlogwriter: a Config.Tracer returns a Trace, the connection
// adds a Recorder to it and records Events (package qlog defines QUIC's),
// and a FileSeq encodes them to a file.
package qlogwriter

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic/quictype"
)

// ConnectionID is a QUIC connection ID (the same type as quic.ConnectionID).
type ConnectionID = quictype.ConnectionID

// A Trace is one qlog trace that several producers (a connection, its
// HTTP/3 layer) record into. The trace ends when the last producer closes.
type Trace interface {
	// AddProducer returns a new Recorder for the trace, or nil once the
	// trace has ended.
	AddProducer() Recorder
}

// A Recorder records events into a trace. RecordEvent may be called from
// several goroutines, but not after or concurrently with Close.
type Recorder interface {
	RecordEvent(Event)
	io.Closer
}

// An Event is a qlog event: its name ("category:event") and its data,
// which Encode writes as one JSON object.
type Event interface {
	Name() string
	Encode(enc *jsontext.Encoder, eventTime time.Time) error
}

// RecordSeparator starts every record of a JSON Text Sequence.
const RecordSeparator byte = 0x1e

var (
	schemasMu sync.Mutex
	schemas   []string
)

// RegisterEventSchema adds an event schema URI that trace headers declare.
// Packages that define events call it from init.
func RegisterEventSchema(schema string) {
	schemasMu.Lock()
	defer schemasMu.Unlock()
	if !slices.Contains(schemas, schema) {
		schemas = append(schemas, schema)
	}
}

func registeredSchemas() []string {
	schemasMu.Lock()
	defer schemasMu.Unlock()
	return slices.Clone(schemas)
}

// Queue bounds of a FileSeq: while Run drains the queue, recorders wait
// when it holds maxQueued events; before Run starts, events beyond
// maxQueuedIdle are dropped (and counted in the log at the end).
const (
	maxQueued     = 256
	maxQueuedIdle = 1 << 16
)

type record struct {
	t  time.Time
	ev Event
}

// A FileSeq is a Trace written to an io.WriteCloser as JSON-SEQ. Events are
// queued by the recorders and encoded by Run, which the owner starts in a
// goroutine of its own (go fs.Run()); when the last recorder closes, Run
// writes what is queued, closes the writer and returns, and that Close
// waits for it. A last Close that comes before Run started writes the
// trace itself, so the trace is complete when it returns either way.
type FileSeq struct {
	w         io.WriteCloser
	vantage   string
	odcid     ConnectionID
	reference time.Time

	mu        sync.Mutex
	cond      sync.Cond
	queue     []record
	producers int
	ended     bool // the last producer closed
	running   bool
	dropped   int
	stopped   chan struct{}
}

// NewFileSeq returns a trace of transport-level events (vantage point
// "transport").
func NewFileSeq(w io.WriteCloser) *FileSeq {
	return newFileSeq(w, "transport", ConnectionID{})
}

// NewConnectionFileSeq returns the trace of one connection, from the
// client's or the server's vantage point, grouped by its original
// destination connection ID.
func NewConnectionFileSeq(w io.WriteCloser, isClient bool, odcid ConnectionID) *FileSeq {
	vantage := "server"
	if isClient {
		vantage = "client"
	}
	return newFileSeq(w, vantage, odcid)
}

func newFileSeq(w io.WriteCloser, vantage string, odcid ConnectionID) *FileSeq {
	t := &FileSeq{w: w, vantage: vantage, odcid: odcid, reference: time.Now(), stopped: make(chan struct{})}
	t.cond.L = &t.mu
	return t
}

// AddProducer returns a Recorder for the trace, or nil once it ended.
func (t *FileSeq) AddProducer() Recorder {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	t.producers++
	return &fileSeqRecorder{t: t}
}

func (t *FileSeq) record(ev Event) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.running && !t.ended && len(t.queue) >= maxQueued {
		t.cond.Wait()
	}
	if t.ended {
		return
	}
	if !t.running && len(t.queue) >= maxQueuedIdle {
		t.dropped++
		return
	}
	t.queue = append(t.queue, record{now, ev})
	t.cond.Broadcast()
}

func (t *FileSeq) removeProducer() {
	t.mu.Lock()
	t.producers--
	last := t.producers == 0 && !t.ended
	if last {
		t.ended = true
		t.cond.Broadcast()
	}
	running := t.running
	if last {
		t.running = true // a Run from now on has nothing to do
	}
	t.mu.Unlock()
	switch {
	case !last:
	case running:
		<-t.stopped
	default:
		// Run has not started (it may be about to): write it all here.
		t.write()
	}
}

// Run writes the trace header and then the recorded events until the last
// recorder closed; then it closes the writer. After the first write error
// the trace is discarded (the error is logged). It returns at once when
// the trace was written already (a last Close before Run).
func (t *FileSeq) Run() {
	t.mu.Lock()
	if t.running {
		t.mu.Unlock()
		return
	}
	t.running = true
	t.mu.Unlock()
	t.write()
}

// write is Run's work, done by Run or by the last Close.
func (t *FileSeq) write() {
	defer close(t.stopped)

	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	var werr error
	write := func() {
		if werr == nil && buf.Len() > 0 {
			_, werr = t.w.Write(buf.Bytes())
		}
		buf.Reset()
	}
	buf.WriteByte(RecordSeparator)
	werr = t.encodeHeader(enc)
	buf.WriteByte('\n')
	write()
	var batch []record
	for {
		t.mu.Lock()
		for len(t.queue) == 0 && !t.ended {
			t.cond.Wait()
		}
		batch, t.queue = t.queue, batch[:0]
		ended, dropped := t.ended && len(batch) == 0, t.dropped
		t.cond.Broadcast()
		t.mu.Unlock()
		if ended {
			if dropped > 0 {
				slog.Warn("qlog: events dropped before Run started", "count", dropped)
			}
			if werr != nil {
				slog.Warn("qlog: writing the trace failed", "err", werr)
			}
			if err := t.w.Close(); err != nil && werr == nil {
				slog.Warn("qlog: closing the trace failed", "err", err)
			}
			return
		}
		for _, r := range batch {
			if werr != nil {
				break
			}
			buf.WriteByte(RecordSeparator)
			werr = t.encodeEvent(enc, r)
			buf.WriteByte('\n')
			if buf.Len() >= 32<<10 {
				write()
			}
		}
		write()
		clear(batch)
	}
}

type tokenWriter struct {
	enc *jsontext.Encoder
	err error
}

func (w *tokenWriter) tok(t jsontext.Token) {
	if w.err == nil {
		w.err = w.enc.WriteToken(t)
	}
}

func (w *tokenWriter) str(s string) { w.tok(jsontext.String(s)) }

func (t *FileSeq) encodeHeader(enc *jsontext.Encoder) error {
	w := &tokenWriter{enc: enc}
	w.tok(jsontext.BeginObject)
	w.str("file_schema")
	w.str("urn:ietf:params:qlog:file:sequential")
	w.str("serialization_format")
	w.str("application/qlog+json-seq")
	w.str("title")
	w.str("turboretry qlog")
	w.str("trace")
	w.tok(jsontext.BeginObject)
	if s := registeredSchemas(); len(s) > 0 {
		w.str("event_schemas")
		w.tok(jsontext.BeginArray)
		for _, v := range s {
			w.str(v)
		}
		w.tok(jsontext.EndArray)
	}
	w.str("vantage_point")
	w.tok(jsontext.BeginObject)
	w.str("type")
	w.str(t.vantage)
	w.tok(jsontext.EndObject)
	w.str("common_fields")
	w.tok(jsontext.BeginObject)
	if t.odcid.Valid() {
		w.str("group_id")
		w.str(t.odcid.String())
	}
	w.str("reference_time")
	w.tok(jsontext.BeginObject)
	w.str("clock_type")
	w.str("monotonic")
	w.str("epoch")
	w.str("unknown")
	w.str("wall_clock_time")
	w.str(t.reference.Format(time.RFC3339Nano))
	w.tok(jsontext.EndObject)
	w.tok(jsontext.EndObject)
	w.tok(jsontext.EndObject)
	// qvis still reads these two from draft 0.3.
	w.str("qlog_format")
	w.str("JSON-SEQ")
	w.str("qlog_version")
	w.str("0.3")
	w.tok(jsontext.EndObject)
	return w.err
}

func (t *FileSeq) encodeEvent(enc *jsontext.Encoder, r record) error {
	w := &tokenWriter{enc: enc}
	w.tok(jsontext.BeginObject)
	w.str("time")
	w.tok(jsontext.Float(float64(r.t.Sub(t.reference).Nanoseconds()) / 1e6))
	w.str("name")
	w.str(r.ev.Name())
	w.str("data")
	if w.err == nil {
		w.err = r.ev.Encode(enc, r.t)
	}
	w.tok(jsontext.EndObject)
	return w.err
}

type fileSeqRecorder struct {
	t      *FileSeq
	closed sync.Once
}

func (r *fileSeqRecorder) RecordEvent(ev Event) { r.t.record(ev) }

func (r *fileSeqRecorder) Close() error {
	r.closed.Do(r.t.removeProducer)
	return nil
}
