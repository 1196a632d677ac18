package qlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	gqlog "github.com/quic-go/quic-go/http3/qlog"
	gjsontext "github.com/quic-go/quic-go/qlogwriter/jsontext"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic"
)

type theirEvent interface {
	Name() string
	Encode(*gjsontext.Encoder, time.Time) error
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// TestSameJSONAsQuicGo encodes each event with this package and with
// quic-go's http3/qlog and compares names and JSON.
func TestSameJSONAsQuicGo(t *testing.T) {
	raw := qlog.RawInfo{Length: 20, PayloadLength: 17}
	graw := gqlog.RawInfo{Length: 20, PayloadLength: 17}
	onlyLen := qlog.RawInfo{Length: 9, PayloadLength: qlog.OmitLength}
	gonlyLen := gqlog.RawInfo{Length: 9, PayloadLength: gqlog.OmitLength}
	none := qlog.RawInfo{Length: qlog.OmitLength, PayloadLength: qlog.OmitLength}
	gnone := gqlog.RawInfo{Length: gqlog.OmitLength, PayloadLength: gqlog.OmitLength}
	fields := []qlog.HeaderField{{Name: ":method", Value: "GET"}, {Name: "x-bin", Value: "\xff\x00", InvalidValue: true}, {Name: "b\xffad", Value: "v"}}
	gfields := []gqlog.HeaderField{{Name: ":method", Value: "GET"}, {Name: "x-bin", Value: "\xff\x00", InvalidValue: true}, {Name: "b\xffad", Value: "v"}}
	frames := []struct {
		name   string
		ours   any
		theirs any
	}{
		{"data", qlog.DataFrame{}, gqlog.DataFrame{}},
		{"headers", qlog.HeadersFrame{HeaderFields: fields}, gqlog.HeadersFrame{HeaderFields: gfields}},
		{"goaway", qlog.GoAwayFrame{StreamID: 8}, gqlog.GoAwayFrame{StreamID: 8}},
		{"settings", qlog.SettingsFrame{MaxFieldSectionSize: 1 << 14, Datagram: 1, ExtendedConnect: -1, Other: map[uint64]uint64{0x21: 7}},
			gqlog.SettingsFrame{MaxFieldSectionSize: 1 << 14, Datagram: 1, ExtendedConnect: -1, Other: map[uint64]uint64{0x21: 7}}},
		{"settings empty", qlog.SettingsFrame{MaxFieldSectionSize: -1, Datagram: -1, ExtendedConnect: 1}, gqlog.SettingsFrame{MaxFieldSectionSize: -1, Datagram: -1, ExtendedConnect: 1}},
		{"push_promise", qlog.PushPromiseFrame{}, gqlog.PushPromiseFrame{}},
		{"cancel_push", qlog.CancelPushFrame{}, gqlog.CancelPushFrame{}},
		{"max_push_id", qlog.MaxPushIDFrame{}, gqlog.MaxPushIDFrame{}},
		{"priority_update", qlog.PriorityUpdateFrame{StreamID: 4, PriorityFieldValue: "u=1, i"}, gqlog.PriorityUpdateFrame{StreamID: 4, PriorityFieldValue: "u=1, i"}},
		{"reserved", qlog.ReservedFrame{Type: 0x40}, gqlog.ReservedFrame{Type: 0x40}},
		{"unknown", qlog.UnknownFrame{Type: 0x1234}, gqlog.UnknownFrame{Type: 0x1234}},
		{"not a frame", 42, 42},
	}
	type pair struct {
		name   string
		ours   qlogwriter.Event
		theirs theirEvent
	}
	var pairs []pair
	for _, f := range frames {
		pairs = append(pairs,
			pair{"created " + f.name, qlog.FrameCreated{StreamID: 4, Raw: raw, Frame: qlog.Frame{Frame: f.ours}},
				gqlog.FrameCreated{StreamID: 4, Raw: graw, Frame: gqlog.Frame{Frame: f.theirs}}},
			pair{"parsed " + f.name, qlog.FrameParsed{StreamID: 3, Raw: onlyLen, Frame: qlog.Frame{Frame: f.ours}},
				gqlog.FrameParsed{StreamID: 3, Raw: gonlyLen, Frame: gqlog.Frame{Frame: f.theirs}}},
			pair{"parsed no raw " + f.name, qlog.FrameParsed{StreamID: 3, Raw: none, Frame: qlog.Frame{Frame: f.ours}},
				gqlog.FrameParsed{StreamID: 3, Raw: gnone, Frame: gqlog.Frame{Frame: f.theirs}}},
		)
	}
	pairs = append(pairs,
		pair{"datagram_created", qlog.DatagramCreated{QuarterStreamID: 1, Raw: raw}, gqlog.DatagramCreated{QuarterStreamID: 1, Raw: graw}},
		pair{"datagram_parsed", qlog.DatagramParsed{QuarterStreamID: 2, Raw: onlyLen}, gqlog.DatagramParsed{QuarterStreamID: 2, Raw: gonlyLen}},
		pair{"stream_type_set control", qlog.StreamTypeSet{Initiator: qlog.InitiatorLocal, StreamID: 2, StreamType: qlog.StreamTypeControl},
			gqlog.StreamTypeSet{Initiator: gqlog.InitiatorLocal, StreamID: 2, StreamType: gqlog.StreamTypeControl}},
		pair{"stream_type_set qpack", qlog.StreamTypeSet{Initiator: qlog.InitiatorRemote, StreamID: 7, StreamType: qlog.StreamTypeQPACKDecode},
			gqlog.StreamTypeSet{Initiator: gqlog.InitiatorRemote, StreamID: 7, StreamType: gqlog.StreamTypeQPACKDecode}},
		pair{"stream_type_set reserved", qlog.StreamTypeSet{Initiator: qlog.InitiatorRemote, StreamID: 11, StreamType: qlog.StreamTypeUnknown, StreamTypeBytes: 0x21 + 2*0x1f},
			gqlog.StreamTypeSet{Initiator: gqlog.InitiatorRemote, StreamID: 11, StreamType: gqlog.StreamTypeUnknown, StreamTypeBytes: 0x21 + 2*0x1f}},
		pair{"stream_type_set unknown", qlog.StreamTypeSet{Initiator: qlog.InitiatorRemote, StreamID: 11, StreamType: qlog.StreamTypeUnknown, StreamTypeBytes: 0x54},
			gqlog.StreamTypeSet{Initiator: gqlog.InitiatorRemote, StreamID: 11, StreamType: gqlog.StreamTypeUnknown, StreamTypeBytes: 0x54}},
	)
	for _, p := range pairs {
		if p.ours.Name() != p.theirs.Name() {
			t.Errorf("%s: name %q, quic-go %q", p.name, p.ours.Name(), p.theirs.Name())
		}
		var a, b bytes.Buffer
		if err := p.ours.Encode(jsontext.NewEncoder(&a), time.Time{}); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if err := p.theirs.Encode(gjsontext.NewEncoder(&b), time.Time{}); err != nil {
			t.Fatalf("%s: quic-go: %v", p.name, err)
		}
		if got, want := decode(t, a.Bytes()), decode(t, b.Bytes()); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n ours    %s\n quic-go %s", p.name, a.Bytes(), b.Bytes())
		}
	}
}

// TestEventSchemaInTraceHeader: a trace lists the HTTP/3 schema.
func TestEventSchemaInTraceHeader(t *testing.T) {
	buf := &closingBuffer{closed: make(chan struct{})}
	tr := qlogwriter.NewFileSeq(buf)
	go tr.Run()
	r := tr.AddProducer()
	r.RecordEvent(qlog.FrameCreated{StreamID: 0, Raw: qlog.RawInfo{Length: 3, PayloadLength: 1}, Frame: qlog.Frame{Frame: qlog.DataFrame{}}})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	<-buf.closed
	out := buf.String()
	for _, want := range []string{qlog.EventSchema, `"http3:frame_created"`, `"frame_type":"data"`} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %s:\n%s", want, out)
		}
	}
}

type closingBuffer struct {
	bytes.Buffer
	closed chan struct{}
}

func (b *closingBuffer) Close() error { close(b.closed); return nil }

// recordingTrace keeps every event its producers record.
type recordingTrace struct{ events []qlogwriter.Event }

func (t *recordingTrace) AddProducer() qlogwriter.Recorder { return (*recorder)(t) }

type recorder recordingTrace

func (r *recorder) RecordEvent(ev qlogwriter.Event) { r.events = append(r.events, ev) }
func (r *recorder) Close() error                    { return nil }

func TestRedactHeaders(t *testing.T) {
	if qlog.RedactHeaders(nil, func(_, v string) string { return v }) != nil {
		t.Fatal("nil tracer not kept")
	}
	inner := &recordingTrace{}
	tracer := func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return inner }
	if got := qlog.RedactHeaders(tracer, nil); got == nil {
		t.Fatal("nil redact dropped the tracer")
	}
	var seen []string
	wrapped := qlog.RedactHeaders(tracer, func(name, value string) string {
		seen = append(seen, name)
		if name == "Authorization" || name == ":path" {
			return "[redacted]"
		}
		return value
	})
	r := wrapped(context.Background(), true, quic.ConnectionID{}).AddProducer()
	fields := []qlog.HeaderField{{Name: ":path", Value: "/secret"}, {Name: "authorization", Value: "\xffBearer", InvalidValue: true}, {Name: "accept", Value: "*/*"}}
	r.RecordEvent(qlog.FrameCreated{StreamID: 0, Frame: qlog.Frame{Frame: qlog.HeadersFrame{HeaderFields: fields}}})
	r.RecordEvent(qlog.FrameParsed{StreamID: 0, Frame: qlog.Frame{Frame: qlog.HeadersFrame{HeaderFields: fields}}})
	r.RecordEvent(qlog.FrameParsed{StreamID: 0, Frame: qlog.Frame{Frame: qlog.DataFrame{}}})
	if want := []string{":path", "Authorization", "Accept", ":path", "Authorization", "Accept"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("redact saw %q, want %q", seen, want)
	}
	if len(inner.events) != 3 {
		t.Fatalf("%d events recorded, want 3", len(inner.events))
	}
	want := []qlog.HeaderField{{Name: ":path", Value: "[redacted]"}, {Name: "authorization", Value: "[redacted]"}, {Name: "accept", Value: "*/*"}}
	for i, ev := range inner.events[:2] {
		var f qlog.Frame
		switch ev := ev.(type) {
		case qlog.FrameCreated:
			f = ev.Frame
		case qlog.FrameParsed:
			f = ev.Frame
		}
		if got := f.Frame.(qlog.HeadersFrame).HeaderFields; !reflect.DeepEqual(got, want) {
			t.Errorf("event %d: fields %+v, want %+v", i, got, want)
		}
	}
	if fields[0].Value != "/secret" {
		t.Error("the producer's fields were changed")
	}
}
