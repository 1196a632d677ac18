package quic

import (
	"bufio"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/turboretry/turboretry/qlogwriter"
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
// when needed. A file already there is kept: the next connection with
// the same original DCID (a client that reuses it, an earlier run of the
// program) writes <ODCID>_<client|server>_2.sqlog, then _3, up to
// qlogNameTries names. When no file can be created, the error is logged
// and that connection runs without qlog.
func QlogDir(dir string) func(Perspective, []byte) io.WriteCloser {
	return func(p Perspective, odcid []byte) io.WriteCloser {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			slog.Warn("quic: qlog", "err", err)
			return nil
		}
		base := filepath.Join(dir, hex.EncodeToString(odcid)+"_"+p.String())
		f, err := createQlogFile(base)
		if err != nil {
			slog.Warn("quic: qlog", "err", err)
			return nil
		}
		// The trace writes after every batch of events, often a few
		// hundred bytes: the buffer turns them into whole chunks.
		return &bufferedQlogFile{w: bufio.NewWriterSize(f, qlogFileBuffer), f: f}
	}
}

// qlogNameTries bounds the names QlogDir tries for one original DCID, so
// that many connections reusing one cannot make it search without end.
const qlogNameTries = 16

// createQlogFile creates base.sqlog, or base_2.sqlog, base_3.sqlog, ...
// when that exists, never truncating a file already there.
func createQlogFile(base string) (*os.File, error) {
	name := base + ".sqlog"
	for i := 2; ; i++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil || !errors.Is(err, fs.ErrExist) || i > qlogNameTries {
			return f, err
		}
		name = base + "_" + strconv.Itoa(i) + ".sqlog"
	}
}

// qlogFileBuffer is how much a QlogDir file collects before writing.
const qlogFileBuffer = 32 << 10

// bufferedQlogFile is a QlogDir file behind a buffer that Close flushes.
type bufferedQlogFile struct {
	w *bufio.Writer
	f *os.File
}

func (b *bufferedQlogFile) Write(p []byte) (int, error) { return b.w.Write(p) }

func (b *bufferedQlogFile) Close() error {
	err := b.w.Flush()
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// qlogTrace is the adapter behind Config.Qlog: the writer it asks for
// becomes a qlogwriter.FileSeq, which the Tracer path records into like
// any other trace (startRecorders). It returns nil without a writer.
func qlogTrace(newWriter func(Perspective, []byte) io.WriteCloser, isClient bool, odcid []byte) qlogwriter.Trace {
	p := PerspectiveServer
	if isClient {
		p = PerspectiveClient
	}
	w := newWriter(p, slices.Clone(odcid))
	if w == nil {
		return nil
	}
	fs := qlogwriter.NewConnectionFileSeq(w, isClient, ConnectionIDFromBytes(odcid))
	// Run writes without any lock of ours and closes the writer once the
	// last producer (the connection, an HTTP/3 layer) closed.
	go fs.Run()
	return fs
}

// joinTraces returns a trace recording into both a and b (either may be
// nil): Config.Tracer's and Config.Qlog's, when both are set.
func joinTraces(a, b qlogwriter.Trace) qlogwriter.Trace {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return traceGroup{a, b}
}

// traceGroup is a trace made of two.
type traceGroup [2]qlogwriter.Trace

// AddProducer returns a recorder for both traces, or for the one that
// has not ended; nil once both ended.
func (g traceGroup) AddProducer() qlogwriter.Recorder {
	ra, rb := g[0].AddProducer(), g[1].AddProducer()
	switch {
	case ra == nil:
		return rb // nil when both ended
	case rb == nil:
		return ra
	}
	return recorderGroup{ra, rb}
}

// recorderGroup records each event into two recorders.
type recorderGroup [2]qlogwriter.Recorder

func (g recorderGroup) RecordEvent(ev qlogwriter.Event) {
	g[0].RecordEvent(ev)
	g[1].RecordEvent(ev)
}

func (g recorderGroup) Close() error {
	errA, errB := g[0].Close(), g[1].Close()
	if errA != nil {
		return errA
	}
	return errB
}
