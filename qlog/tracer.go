package qlog

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/turboretry/turboretry/qlogwriter"
)

// EventSchema is the URI of the QUIC event definitions these events follow.
const EventSchema = "urn:ietf:params:qlog:events:quic-14"

func init() { qlogwriter.RegisterEventSchema(EventSchema) }

// DefaultConnectionTracer is a Config.Tracer that writes each connection's
// qlog to $QLOGDIR/<odcid>_<client|server>.sqlog (creating the directory),
// or returns nil (no qlog) when QLOGDIR is unset or the file cannot be
// created (the error is logged).
func DefaultConnectionTracer(_ context.Context, isClient bool, connID ConnectionID) qlogwriter.Trace {
	dir := os.Getenv("QLOGDIR")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		slog.Warn("qlog: creating QLOGDIR failed", "dir", dir, "err", err)
		return nil
	}
	vantage := "server"
	if isClient {
		vantage = "client"
	}
	path := filepath.Join(dir, connID.String()+"_"+vantage+".sqlog")
	f, err := os.Create(path)
	if err != nil {
		slog.Warn("qlog: creating the trace file failed", "path", path, "err", err)
		return nil
	}
	t := qlogwriter.NewConnectionFileSeq(&bufferedFile{Writer: bufio.NewWriterSize(f, 64<<10), f: f}, isClient, connID)
	go t.Run()
	return t
}

// bufferedFile flushes its buffer when closed.
type bufferedFile struct {
	*bufio.Writer
	f io.Closer
}

func (b *bufferedFile) Close() error {
	err := b.Flush()
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RedactIPs wraps a Config.Tracer so that the addresses of
// StartedConnection, TupleAssigned and the preferred_address parameter are
// replaced by what redact returns, when it returns true; isLocal says
// whether the address is ours.
func RedactIPs(
	tracer func(context.Context, bool, ConnectionID) qlogwriter.Trace,
	redact func(addr netip.AddrPort, isLocal bool) (string, bool),
) func(context.Context, bool, ConnectionID) qlogwriter.Trace {
	if tracer == nil || redact == nil {
		return tracer
	}
	return func(ctx context.Context, isClient bool, id ConnectionID) qlogwriter.Trace {
		t := tracer(ctx, isClient, id)
		if t == nil {
			return nil
		}
		return &redactingTrace{t: t, redact: redact}
	}
}

type redactingTrace struct {
	t      qlogwriter.Trace
	redact func(netip.AddrPort, bool) (string, bool)
}

func (t *redactingTrace) AddProducer() qlogwriter.Recorder {
	r := t.t.AddProducer()
	if r == nil {
		return nil
	}
	return &redactingRecorder{Recorder: r, redact: t.redact}
}

type redactingRecorder struct {
	qlogwriter.Recorder
	redact func(netip.AddrPort, bool) (string, bool)
}

func (r *redactingRecorder) RecordEvent(ev qlogwriter.Event) {
	switch e := ev.(type) {
	case StartedConnection:
		e.RedactedLocal = r.endpoint(e.Local, true)
		e.RedactedRemote = r.endpoint(e.Remote, false)
		ev = e
	case TupleAssigned:
		e.RedactedLocal = r.endpoint(e.Local, true)
		e.RedactedRemote = r.endpoint(e.Remote, false)
		ev = e
	case ParametersSet:
		if e.PreferredAddress != nil {
			pa := *e.PreferredAddress
			// The server's preferred address is the server's own.
			isLocal := e.Initiator == InitiatorLocal
			pa.RedactedIPv4 = r.addr(pa.IPv4, isLocal)
			pa.RedactedIPv6 = r.addr(pa.IPv6, isLocal)
			e.PreferredAddress = &pa
			ev = e
		}
	}
	r.Recorder.RecordEvent(ev)
}

func (r *redactingRecorder) endpoint(p TupleEndpointInfo, isLocal bool) *string {
	if p.IPv4.IsValid() {
		return r.addr(p.IPv4, isLocal)
	}
	return r.addr(p.IPv6, isLocal)
}

func (r *redactingRecorder) addr(ap netip.AddrPort, isLocal bool) *string {
	if !ap.IsValid() {
		return nil
	}
	if s, ok := r.redact(ap, isLocal); ok {
		return &s
	}
	return nil
}
