package http3

import (
	"errors"
	"io"

	"github.com/quic-go/qpack"
)

// errFieldSectionTooLarge is the cause of errors about field sections that
// exceed SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 section 4.2.2). A
// server that finds it in a request error can answer 431 (Request Header
// Fields Too Large) instead of resetting the stream.
var errFieldSectionTooLarge = errors.New("http3: field section exceeds SETTINGS_MAX_FIELD_SECTION_SIZE")

// appendWriter is the io.Writer the qpack encoder writes to: it appends to
// a caller-provided slice, so encoding into a reused buffer allocates
// nothing.
type appendWriter struct {
	b []byte
}

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// fieldEncoder turns fields into a QPACK field section using the static
// table only (RFC 9204 section 4.5; the peer's dynamic table capacity is
// never used). It is reused across sections but not safe for concurrent
// use.
//
// The peer's SETTINGS_MAX_FIELD_SECTION_SIZE is not applied (RFC 9114
// section 4.2.2: "SHOULD NOT" exceed it), as in quic-go: the receiver
// refuses a section over its limit and says why (431 from a server,
// "headers too large" from a client), where a refusal here would depend
// on whether the peer's SETTINGS had arrived yet.
type fieldEncoder struct {
	w   appendWriter
	enc *qpack.Encoder
	err error
	// onField, when set, sees every field encoded (httptrace's
	// WroteHeaderField).
	onField func(name, value string)
	// acceptGzip makes encodeRequest add "accept-encoding: gzip" (the
	// Transport's transparent compression).
	acceptGzip bool
	// log collects the fields of the section for qlog, when on.
	log qlogFields
}

func newFieldEncoder() *fieldEncoder {
	e := &fieldEncoder{}
	e.enc = qpack.NewEncoder(&e.w)
	return e
}

// begin starts a field section appended to dst.
func (e *fieldEncoder) begin(dst []byte) {
	_ = e.enc.Close() // forget a section abandoned on an error: the next field writes a new prefix
	e.w.b, e.err = dst, nil
	e.log.reset()
}

// field adds one field; the first error is kept and reported by finish.
func (e *fieldEncoder) field(name, value string) {
	if e.err != nil {
		return
	}
	e.err = e.enc.WriteField(qpack.HeaderField{Name: name, Value: value})
	if e.err != nil {
		return
	}
	if e.onField != nil {
		e.onField(name, value)
	}
	if e.log.on {
		e.log.add(name, value, len(name) > 0 && name[0] == ':')
	}
}

// fail records an error found by the caller while building the section.
func (e *fieldEncoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// finish ends the section and returns dst with it appended. A section
// with no fields still gets its two-byte prefix (RFC 9204 section 4.5.1),
// which the qpack encoder writes only with the first field.
func (e *fieldEncoder) finish(dst []byte) ([]byte, error) {
	b, err := e.w.b, e.err
	e.w.b = nil
	_ = e.enc.Close() // resets the encoder's prefix state; never fails
	if err != nil {
		return dst, err
	}
	if len(b) == len(dst) {
		b = append(b, 0, 0) // Required Insert Count 0, Base 0
	}
	return b, nil
}

// fieldIter decodes the fields of one section and enforces our
// SETTINGS_MAX_FIELD_SECTION_SIZE while decoding, so an oversized section
// is rejected without materialising all of it.
//
// Allocation: qpack returns static-table names and values without
// allocating, but every literal name or value (Huffman-coded or not)
// becomes a new string. The decode closure itself does not escape.
type fieldIter struct {
	next  qpack.DecodeFunc
	size  uint64
	limit uint64 // 0: no limit
}

func newFieldIter(p []byte, limit uint64) fieldIter {
	var dec qpack.Decoder // stateless without a dynamic table
	return fieldIter{next: dec.Decode(p), limit: limit}
}

// field returns the next field, io.EOF after the last one. A section the
// static-table decoder cannot decode (including any dynamic table
// reference, which our advertised capacity of 0 forbids) is
// QPACK_DECOMPRESSION_FAILED (RFC 9204 section 2.2.3).
func (it *fieldIter) field() (qpack.HeaderField, error) {
	hf, err := it.next()
	if err == io.EOF {
		return hf, io.EOF
	}
	if err != nil {
		return hf, wrapError(ErrCodeQPACKDecompressionFailed, err, "%v", err)
	}
	it.size += fieldSize(hf.Name, hf.Value)
	if it.limit != 0 && it.size > it.limit {
		return hf, wrapError(ErrCodeExcessiveLoad, errFieldSectionTooLarge,
			"http3: headers too large: the field section exceeds our limit of %d bytes", it.limit)
	}
	return hf, nil
}

// malformed returns the stream error for a malformed request or response
// (RFC 9114 section 4.1.2).
func malformed(format string, args ...any) error {
	return newError(ErrCodeMessageError, format, args...)
}
