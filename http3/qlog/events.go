// Package qlog defines the HTTP/3 qlog events (draft-ietf-quic-qlog-h3-events)
// under the names of quic-go's http3/qlog, so that a quic-go program's
// qlog code builds on TurboRetry: the events implement qlogwriter.Event and
// go into a connection's trace (quic.Conn.QlogTrace); RedactHeaders wraps a
// quic.Config.Tracer to redact header values.
package qlog

import (
	"time"

	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic"
)

// EventSchema is the URI of the HTTP/3 event schema that traces declare.
const EventSchema = "urn:ietf:params:qlog:events:http3-14"

func init() { qlogwriter.RegisterEventSchema(EventSchema) }

// OmitLength in a RawInfo field leaves that length out of the event.
const OmitLength = -1

// RawInfo gives the lengths of a frame or datagram: Length with its
// header, PayloadLength without. Zero is logged; OmitLength is not.
type RawInfo struct {
	Length        int
	PayloadLength int
}

// HasValues reports whether at least one length is logged.
func (i RawInfo) HasValues() bool { return i.Length != OmitLength || i.PayloadLength != OmitLength }

func (i RawInfo) encode(e *encoder) {
	e.begin()
	if i.Length != OmitLength {
		e.uint("length", uint64(i.Length))
	}
	if i.PayloadLength != OmitLength {
		e.uint("payload_length", uint64(i.PayloadLength))
	}
	e.end()
}

// FrameParsed is an HTTP/3 frame read from a stream.
type FrameParsed struct {
	StreamID quic.StreamID
	Raw      RawInfo
	Frame    Frame
}

// Name implements qlogwriter.Event.
func (FrameParsed) Name() string { return "http3:frame_parsed" }

// Encode implements qlogwriter.Event.
func (ev FrameParsed) Encode(enc *jsontext.Encoder, _ time.Time) error {
	return encodeFrameEvent(enc, ev.StreamID, ev.Raw, ev.Frame)
}

// FrameCreated is an HTTP/3 frame written to a stream.
type FrameCreated struct {
	StreamID quic.StreamID
	Raw      RawInfo
	Frame    Frame
}

// Name implements qlogwriter.Event.
func (FrameCreated) Name() string { return "http3:frame_created" }

// Encode implements qlogwriter.Event.
func (ev FrameCreated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	return encodeFrameEvent(enc, ev.StreamID, ev.Raw, ev.Frame)
}

func encodeFrameEvent(enc *jsontext.Encoder, id quic.StreamID, raw RawInfo, f Frame) error {
	e := &encoder{enc: enc}
	e.begin()
	e.uint("stream_id", uint64(id))
	e.name("frame")
	f.encode(e, raw)
	e.end()
	return e.err
}

// DatagramCreated is an HTTP datagram (RFC 9297) sent.
type DatagramCreated struct {
	QuarterStreamID uint64
	Raw             RawInfo
}

// Name implements qlogwriter.Event.
func (DatagramCreated) Name() string { return "http3:datagram_created" }

// Encode implements qlogwriter.Event.
func (ev DatagramCreated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	return encodeDatagramEvent(enc, ev.QuarterStreamID, ev.Raw)
}

// DatagramParsed is an HTTP datagram (RFC 9297) received.
type DatagramParsed struct {
	QuarterStreamID uint64
	Raw             RawInfo
}

// Name implements qlogwriter.Event.
func (DatagramParsed) Name() string { return "http3:datagram_parsed" }

// Encode implements qlogwriter.Event.
func (ev DatagramParsed) Encode(enc *jsontext.Encoder, _ time.Time) error {
	return encodeDatagramEvent(enc, ev.QuarterStreamID, ev.Raw)
}

func encodeDatagramEvent(enc *jsontext.Encoder, qsid uint64, raw RawInfo) error {
	e := &encoder{enc: enc}
	e.begin()
	e.uint("quarter_stream_id", qsid)
	e.name("raw")
	raw.encode(e)
	e.end()
	return e.err
}

// Initiator says which endpoint opened a stream.
type Initiator string

// The initiators.
const (
	InitiatorLocal  Initiator = "local"
	InitiatorRemote Initiator = "remote"
)

// StreamType is the type of a unidirectional HTTP/3 stream.
type StreamType string

// The stream types of RFC 9114 and RFC 9204; StreamTypeUnknown for the rest.
const (
	StreamTypeControl     StreamType = "control"
	StreamTypePush        StreamType = "push"
	StreamTypeQPACKEncode StreamType = "qpack_encode"
	StreamTypeQPACKDecode StreamType = "qpack_decode"
	StreamTypeUnknown     StreamType = "unknown"
)

// StreamTypeSet is logged once the type of a unidirectional stream is
// known. StreamTypeBytes, the type on the wire, is logged for unknown types
// only; reserved (grease) types are logged as "reserved".
type StreamTypeSet struct {
	Initiator       Initiator
	StreamID        quic.StreamID
	StreamType      StreamType
	StreamTypeBytes uint64
}

// Name implements qlogwriter.Event.
func (StreamTypeSet) Name() string { return "http3:stream_type_set" }

// Encode implements qlogwriter.Event.
func (ev StreamTypeSet) Encode(enc *jsontext.Encoder, _ time.Time) error {
	e := &encoder{enc: enc}
	e.begin()
	e.str("initiator", string(ev.Initiator))
	e.uint("stream_id", uint64(ev.StreamID))
	if ev.StreamType != StreamTypeUnknown {
		e.str("stream_type", string(ev.StreamType))
	} else {
		t := "unknown"
		if greased(ev.StreamTypeBytes) {
			t = "reserved"
		}
		e.str("stream_type", t)
		e.uint("stream_type_bytes", ev.StreamTypeBytes)
	}
	e.end()
	return e.err
}

// greased reports whether v is a reserved type, 0x1f*N + 0x21 (RFC 9114
// sections 6.2.3 and 7.2.8).
func greased(v uint64) bool { return v >= 0x21 && (v-0x21)%0x1f == 0 }

// encoder writes tokens and keeps the first error.
type encoder struct {
	enc *jsontext.Encoder
	err error
}

func (e *encoder) tok(t jsontext.Token) {
	if e.err == nil {
		e.err = e.enc.WriteToken(t)
	}
}

func (e *encoder) begin()                  { e.tok(jsontext.BeginObject) }
func (e *encoder) end()                    { e.tok(jsontext.EndObject) }
func (e *encoder) name(n string)           { e.tok(jsontext.String(n)) }
func (e *encoder) str(n, v string)         { e.name(n); e.tok(jsontext.String(v)) }
func (e *encoder) uint(n string, v uint64) { e.name(n); e.tok(jsontext.Uint(v)) }
