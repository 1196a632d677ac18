package qlog

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic"
)

// RedactHeaders wraps a quic.Config.Tracer so that the header and trailer
// values of the HEADERS frames logged into its traces pass through redact
// first. redact gets names in http.CanonicalHeaderKey form, pseudo-header
// names (":path") as they are. A nil tracer or redact returns tracer.
func RedactHeaders(
	tracer func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace,
	redact func(name, value string) string,
) func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	if tracer == nil || redact == nil {
		return tracer
	}
	return func(ctx context.Context, isClient bool, id quic.ConnectionID) qlogwriter.Trace {
		t := tracer(ctx, isClient, id)
		if t == nil {
			return nil
		}
		return redactingTrace{t, redact}
	}
}

type redactingTrace struct {
	qlogwriter.Trace
	redact func(name, value string) string
}

func (t redactingTrace) AddProducer() qlogwriter.Recorder {
	r := t.Trace.AddProducer()
	if r == nil {
		return nil
	}
	return redactingRecorder{r, t.redact}
}

type redactingRecorder struct {
	qlogwriter.Recorder
	redact func(name, value string) string
}

func (r redactingRecorder) RecordEvent(ev qlogwriter.Event) {
	switch e := ev.(type) {
	case FrameCreated:
		e.Frame = r.redactFrame(e.Frame)
		ev = e
	case FrameParsed:
		e.Frame = r.redactFrame(e.Frame)
		ev = e
	}
	r.Recorder.RecordEvent(ev)
}

// redactFrame returns a HEADERS frame with redacted values, in a copy of
// the fields so that the producer's slice stays as it was; other frames
// come back unchanged.
func (r redactingRecorder) redactFrame(f Frame) Frame {
	h, ok := f.Frame.(HeadersFrame)
	if !ok {
		return f
	}
	fields := slices.Clone(h.HeaderFields)
	for i := range fields {
		hf := &fields[i]
		name := hf.Name
		if !strings.HasPrefix(name, ":") {
			name = http.CanonicalHeaderKey(name)
		}
		if v := r.redact(name, hf.Value); v != hf.Value {
			hf.Value = v
			hf.InvalidValue = false
		}
	}
	return Frame{Frame: HeadersFrame{HeaderFields: fields}}
}
