package http3

import (
	"errors"
	"io"

	"github.com/turboretry/turboretry/internal/wire"
)

// The Capsule Protocol (RFC 9297 section 3): on a stream that an
// extended CONNECT (or another upgrade) turned into a tunnel, the data is
// a sequence of capsules, each a Type varint, a Length varint and Length
// bytes of Value. WebTransport and MASQUE (CONNECT-UDP, CONNECT-IP) carry
// their control messages this way; the API follows quic-go's.

// CapsuleType is the type of a capsule.
type CapsuleType uint64

// CapsuleProtocolHeader is the header field that announces the Capsule
// Protocol (RFC 9297 section 3.4; its value is the structured-field
// boolean "?1").
const CapsuleProtocolHeader = "Capsule-Protocol"

var (
	errCapsuleReaderInvalid = errors.New("http3: capsule reader is no longer valid")
	errCapsuleNotConsumed   = errors.New("http3: previous capsule was not fully consumed")
)

// CapsuleParser reads a sequence of capsules from a stream. Each
// capsule's value is streamed, never buffered whole, so any length is
// fine; the value must be read to its end (or discarded) before Next is
// called again.
type CapsuleParser struct {
	r  io.Reader
	br io.ByteReader // r itself, or one byte at a time: the parser never reads ahead

	generation uint64 // of the current capsule, to invalidate older readers
	remaining  uint64 // unread bytes of the current capsule's value
}

// oneByteReader reads single bytes from an io.Reader that is not an
// io.ByteReader, without buffering (what follows the capsules belongs to
// the caller).
type oneByteReader struct {
	r io.Reader
	b [1]byte
}

func (o *oneByteReader) ReadByte() (byte, error) {
	_, err := io.ReadFull(o.r, o.b[:])
	return o.b[0], err
}

// NewCapsuleParser returns a parser reading capsules from r.
func NewCapsuleParser(r io.Reader) *CapsuleParser {
	p := &CapsuleParser{r: r}
	if br, ok := r.(io.ByteReader); ok {
		p.br = br
	} else {
		p.br = &oneByteReader{r: r}
	}
	return p
}

// readVarint reads one varint; counted reports whether any of its bytes
// was read, so a clean end between capsules can be told from a
// truncated one.
func readVarint(br io.ByteReader) (v uint64, counted bool, err error) {
	b0, err := br.ReadByte()
	if err != nil {
		return 0, false, err
	}
	n := 1 << (b0 >> 6)
	v = uint64(b0 & 0x3f)
	for i := 1; i < n; i++ {
		b, err := br.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, true, err
		}
		v = v<<8 | uint64(b)
	}
	return v, true, nil
}

// Next returns the type of the next capsule and a reader of its value.
// At a clean end of the stream, between capsules, it returns io.EOF; a
// stream that ends inside a capsule's type or length is
// io.ErrUnexpectedEOF. It fails when the previous capsule's value was not
// consumed.
func (p *CapsuleParser) Next() (CapsuleType, CapsuleReader, error) {
	if p.remaining > 0 {
		return 0, CapsuleReader{}, errCapsuleNotConsumed
	}
	t, counted, err := readVarint(p.br)
	if err != nil {
		if err == io.EOF && counted {
			err = io.ErrUnexpectedEOF
		}
		return 0, CapsuleReader{}, err
	}
	l, _, err := readVarint(p.br)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, CapsuleReader{}, err
	}
	p.generation++
	p.remaining = l
	return CapsuleType(t), CapsuleReader{p: p, generation: p.generation}, nil
}

// CapsuleReader reads the value of one capsule. It stops being valid
// once CapsuleParser.Next moved to the next capsule.
type CapsuleReader struct {
	p          *CapsuleParser
	generation uint64
}

func (r CapsuleReader) valid() bool { return r.p != nil && r.generation == r.p.generation }

// Read reads from the capsule's value; io.EOF at its end, and
// io.ErrUnexpectedEOF when the stream ends before it.
func (r CapsuleReader) Read(b []byte) (int, error) {
	if !r.valid() {
		return 0, errCapsuleReaderInvalid
	}
	p := r.p
	if p.remaining == 0 {
		return 0, io.EOF
	}
	if uint64(len(b)) > p.remaining {
		b = b[:p.remaining]
	}
	n, err := p.r.Read(b)
	p.remaining -= uint64(n)
	if err == io.EOF && p.remaining > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == io.EOF && n > 0 {
		err = nil // the next Read reports the end
	}
	return n, err
}

// ReadByte reads one byte of the capsule's value.
func (r CapsuleReader) ReadByte() (byte, error) {
	if !r.valid() {
		return 0, errCapsuleReaderInvalid
	}
	p := r.p
	if p.remaining == 0 {
		return 0, io.EOF
	}
	b, err := p.br.ReadByte()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	p.remaining--
	return b, nil
}

// Remaining returns the number of bytes of the value not read yet (0 for
// a reader that is no longer valid).
func (r CapsuleReader) Remaining() int64 {
	if !r.valid() {
		return 0
	}
	return int64(r.p.remaining)
}

// Discard reads and drops the rest of the value.
func (r CapsuleReader) Discard() error {
	_, err := io.Copy(io.Discard, r)
	return err
}

// maxCoalescedCapsule is the largest value WriteCapsule copies to send
// with its type and length in one Write.
const maxCoalescedCapsule = 4 << 10

// WriteCapsule writes one capsule (type, length, value) to w; quic-go's
// takes a quicvarint.Writer, of which io.Writer is the part used.
func WriteCapsule(w io.Writer, ct CapsuleType, value []byte) error {
	if uint64(ct) > wire.MaxVarint {
		return errors.New("http3: capsule type beyond the varint range")
	}
	hdrLen := wire.VarintLen(uint64(ct)) + wire.VarintLen(uint64(len(value)))
	if len(value) <= maxCoalescedCapsule {
		// One Write: on an HTTP/3 Stream, one DATA frame.
		b := make([]byte, 0, hdrLen+len(value))
		b = wire.AppendVarint(b, uint64(ct))
		b = wire.AppendVarint(b, uint64(len(value)))
		_, err := w.Write(append(b, value...))
		return err
	}
	var hdr [16]byte
	b := wire.AppendVarint(hdr[:0], uint64(ct))
	if _, err := w.Write(wire.AppendVarint(b, uint64(len(value)))); err != nil {
		return err
	}
	_, err := w.Write(value)
	return err
}
