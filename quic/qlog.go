package quic

import (
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/quic/quictype"
)

// Perspective says which end of a connection an endpoint is, as in
// quic-go.
type Perspective = quictype.Perspective

// The two perspectives.
const (
	PerspectiveServer = quictype.PerspectiveServer
	PerspectiveClient = quictype.PerspectiveClient
)

// QlogDir returns a Config.Qlog function that writes each connection's
// qlog to <dir>/<ODCID in hex>_<client|server>.sqlog, creating dir (0755)
// when needed. When the directory or file cannot be created, the error is
// logged and that connection runs without qlog.
func QlogDir(dir string) func(Perspective, []byte) io.WriteCloser {
	return func(p Perspective, odcid []byte) io.WriteCloser {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			slog.Warn("quic: qlog", "err", err)
			return nil
		}
		name := filepath.Join(dir, hex.EncodeToString(odcid)+"_"+p.String()+".sqlog")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			slog.Warn("quic: qlog", "err", err)
			return nil
		}
		// The tracer buffers already: the file takes whole chunks.
		return f
	}
}

// qlogFlushSize is how much the tracer buffers before writing.
const qlogFlushSize = 32 << 10

// qlogger writes one connection's qlog (draft-ietf-quic-qlog-main-schema
// 0.3, JSON-SEQ): events are appended to buf under the connection lock; run
// takes full buffers (takeChunk) and writes them out without the lock
// (write), as it closes the writer (close). A write error turns it off for
// good (writeFailed, then failed), never the connection.
type qlogger struct {
	w      io.WriteCloser // written by run only, without mu
	buf    []byte
	start  time.Time
	failed bool
	frame  wire.Frame // scratch for parsing the frames of a packet
	// writeFailed is set by write; the recording side sees it in
	// takeChunk. spare is the buffer written last, to record into next.
	writeFailed atomic.Bool
	spare       []byte

	// Last recovery metrics written, so metrics_updated carries changes
	// only; haveMetrics is false before the first event.
	haveMetrics bool
	metrics     qlogMetrics
}

type qlogMetrics struct {
	minRTT, smoothedRTT, latestRTT, rttVar time.Duration
	cwnd, inFlight                         int
}

// newQlogger asks conf.Qlog for the writer of a connection with original
// destination connection ID odcid and writes the trace header; nil
// without one.
func newQlogger(conf *Config, isClient bool, odcid []byte) *qlogger {
	if conf.Qlog == nil {
		return nil
	}
	p := PerspectiveServer
	if isClient {
		p = PerspectiveClient
	}
	w := conf.Qlog(p, slices.Clone(odcid))
	if w == nil {
		return nil
	}
	q := &qlogger{w: w, start: time.Now(), buf: make([]byte, 0, qlogFlushSize+4096)}
	q.header(p, odcid)
	return q
}

// header appends the trace's first record.
func (q *qlogger) header(p Perspective, odcid []byte) {
	b := append(q.buf, 0x1e)
	b = append(b, `{"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"turboretry qlog","trace":{"vantage_point":{"type":"`...)
	b = append(b, p.String()...)
	b = append(b, `"},"common_fields":{"ODCID":"`...)
	b = hex.AppendEncode(b, odcid)
	b = append(b, `","time_format":"relative","reference_time":`...)
	b = strconv.AppendFloat(b, float64(q.start.UnixNano())/1e6, 'f', 3, 64)
	b = append(b, "}}}\n"...)
	q.buf = b
}

// event starts a record; the caller appends the data object's fields
// (each preceded by a comma, see field) and calls end.
func (q *qlogger) event(name string) []byte {
	b := append(q.buf, 0x1e)
	b = append(b, `{"time":`...)
	b = strconv.AppendFloat(b, float64(time.Since(q.start).Nanoseconds())/1e6, 'f', 3, 64)
	b = append(b, `,"name":"`...)
	b = append(b, name...)
	b = append(b, `","data":{`...)
	return b
}

// end closes the record started by event; run writes the buffer out once
// it is large enough (takeChunk).
func (q *qlogger) end(b []byte) {
	q.buf = append(b, "}}\n"...)
}

// takeChunk (mu held) hands a full buffer to o for writing and records into
// the spare one; after a write error it stops recording.
func (q *qlogger) takeChunk(o *callbackOutbox) {
	if q.failed {
		return
	}
	if q.writeFailed.Load() {
		q.failed = true
		q.buf = nil
		return
	}
	if len(q.buf) < qlogFlushSize {
		return
	}
	o.qlog, o.qlogChunk = q, q.buf
	q.buf, q.spare = q.spare, nil
	if q.buf == nil {
		q.buf = make([]byte, 0, qlogFlushSize+4096)
	}
}

// write writes a chunk of records, without mu; it keeps the chunk as the
// next spare buffer.
func (q *qlogger) write(chunk []byte) {
	if q.writeFailed.Load() {
		return
	}
	if _, err := q.w.Write(chunk); err != nil {
		logQlogError(err)
		q.writeFailed.Store(true)
		_ = q.w.Close()
		return
	}
	q.spare = chunk[:0]
}

// close writes what is buffered and closes the writer, without mu, once
// the connection dropped q (qlogger.closed).
func (q *qlogger) close() {
	if q.failed || q.writeFailed.Load() {
		return
	}
	if len(q.buf) > 0 {
		q.write(q.buf)
		if q.writeFailed.Load() {
			return
		}
	}
	q.failed = true // nothing more may be written
	if err := q.w.Close(); err != nil {
		slog.Warn("quic: qlog", "err", err)
	}
}
