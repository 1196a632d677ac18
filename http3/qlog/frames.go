package qlog

import (
	"encoding/hex"
	"slices"
	"unicode/utf8"

	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic"
)

// Frame is an HTTP/3 frame in an event: Frame holds one of the frame types
// of this package (DataFrame, HeadersFrame, ...), as a value; anything else
// logs only the frame's lengths.
type Frame struct {
	Frame any
}

// frameBody is implemented by the frame types: the fields of the frame
// object after "raw".
type frameBody interface {
	encodeBody(e *encoder)
}

func (f Frame) encode(e *encoder, raw RawInfo) {
	e.begin()
	if raw.HasValues() {
		e.name("raw")
		raw.encode(e)
	}
	if b, ok := f.Frame.(frameBody); ok {
		b.encodeBody(e)
	}
	e.end()
}

// DataFrame is a DATA frame.
type DataFrame struct{}

func (DataFrame) encodeBody(e *encoder) { e.str("frame_type", "data") }

// HeaderField is one field of a HEADERS frame. InvalidName and
// InvalidValue mark characters HTTP/3 does not allow; such a name or value
// (and any that is not UTF-8) is logged as hex bytes.
type HeaderField struct {
	Name         string
	Value        string
	InvalidName  bool
	InvalidValue bool
}

// HeadersFrame is a HEADERS frame, decoded.
type HeadersFrame struct {
	HeaderFields []HeaderField
}

func (f HeadersFrame) encodeBody(e *encoder) {
	e.str("frame_type", "headers")
	e.name("headers")
	e.tok(jsontext.BeginArray)
	for _, hf := range f.HeaderFields {
		e.begin()
		textOrBytes(e, "name", hf.Name, hf.InvalidName)
		textOrBytes(e, "value", hf.Value, hf.InvalidValue)
		e.end()
	}
	e.tok(jsontext.EndArray)
}

// textOrBytes writes s as key, or as key_bytes in hex when it is marked
// invalid or is not UTF-8.
func textOrBytes(e *encoder, key, s string, invalid bool) {
	if !invalid && utf8.ValidString(s) {
		e.str(key, s)
		return
	}
	e.str(key+"_bytes", hex.EncodeToString([]byte(s)))
}

// GoAwayFrame is a GOAWAY frame.
type GoAwayFrame struct {
	StreamID quic.StreamID
}

func (f GoAwayFrame) encodeBody(e *encoder) {
	e.str("frame_type", "goaway")
	e.uint("id", uint64(f.StreamID))
}

// SettingsFrame is a SETTINGS frame. The three known settings are -1 when
// absent; Other holds the rest by identifier.
type SettingsFrame struct {
	MaxFieldSectionSize int64
	Datagram            int64
	ExtendedConnect     int64
	Other               map[uint64]uint64
}

func (f SettingsFrame) encodeBody(e *encoder) {
	e.str("frame_type", "settings")
	e.name("settings")
	e.tok(jsontext.BeginArray)
	known := func(name string, v int64) {
		if v < 0 {
			return
		}
		e.begin()
		e.str("name", name)
		e.uint("value", uint64(v))
		e.end()
	}
	known("settings_max_field_section_size", f.MaxFieldSectionSize)
	known("settings_h3_datagram", f.Datagram)
	known("settings_enable_connect_protocol", f.ExtendedConnect)
	ids := make([]uint64, 0, len(f.Other))
	for id := range f.Other {
		ids = append(ids, id)
	}
	slices.Sort(ids) // a stable order, so equal frames log equally
	for _, id := range ids {
		e.begin()
		e.str("name", "unknown")
		e.uint("name_bytes", id)
		e.uint("value", f.Other[id])
		e.end()
	}
	e.tok(jsontext.EndArray)
}

// PushPromiseFrame is a PUSH_PROMISE frame.
type PushPromiseFrame struct{}

func (PushPromiseFrame) encodeBody(e *encoder) { e.str("frame_type", "push_promise") }

// CancelPushFrame is a CANCEL_PUSH frame.
type CancelPushFrame struct{}

func (CancelPushFrame) encodeBody(e *encoder) { e.str("frame_type", "cancel_push") }

// MaxPushIDFrame is a MAX_PUSH_ID frame.
type MaxPushIDFrame struct{}

func (MaxPushIDFrame) encodeBody(e *encoder) { e.str("frame_type", "max_push_id") }

// PriorityUpdateFrame is a PRIORITY_UPDATE frame for a request stream
// (RFC 9218).
type PriorityUpdateFrame struct {
	StreamID           quic.StreamID
	PriorityFieldValue string
}

func (f PriorityUpdateFrame) encodeBody(e *encoder) {
	e.str("frame_type", "priority_update")
	e.uint("stream_id", uint64(f.StreamID))
	e.str("priority_field_value", f.PriorityFieldValue)
}

// ReservedFrame is a frame of a reserved (grease) type.
type ReservedFrame struct {
	Type uint64
}

func (f ReservedFrame) encodeBody(e *encoder) {
	e.str("frame_type", "reserved")
	e.uint("frame_type_bytes", f.Type)
}

// UnknownFrame is a frame of a type this side does not know.
type UnknownFrame struct {
	Type uint64
}

func (f UnknownFrame) encodeBody(e *encoder) {
	e.str("frame_type", "unknown")
	e.uint("frame_type_bytes", f.Type)
}
