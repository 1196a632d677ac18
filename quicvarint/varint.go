// Package quicvarint reads and writes QUIC variable-length integers
// (RFC 9000 section 16) with the API of quic-go's quicvarint: Append,
// Parse, Read, Peek (from a *quic.Stream, which is a Peeker) and friends.
// Append panics for values above Max, as quic-go's does.
package quicvarint

import (
	"fmt"
	"io"

	"github.com/turboretry/turboretry/internal/wire"
)

// The range of a QUIC varint.
const (
	Min = 0
	Max = wire.MaxVarint
)

// Len returns the length of the minimal encoding of i; it panics for
// values above Max.
func Len(i uint64) int {
	if i > Max {
		panic(fmt.Sprintf("quicvarint: %#x does not fit a varint", i))
	}
	return wire.VarintLen(i)
}

// Append appends the minimal encoding of i.
func Append(b []byte, i uint64) []byte { return wire.AppendVarint(b, i) }

// AppendWithLen appends i encoded in length bytes (1, 2, 4 or 8); it
// panics if i does not fit.
func AppendWithLen(b []byte, i uint64, length int) []byte {
	return wire.AppendVarintWithLen(b, i, length)
}

// Parse decodes the varint at the start of b and returns it and the bytes
// it took; a truncated varint gives io.ErrUnexpectedEOF (io.EOF when b is
// empty).
func Parse(b []byte) (uint64, int, error) {
	if len(b) == 0 {
		return 0, 0, io.EOF
	}
	v, n, err := wire.ParseVarint(b)
	if err != nil {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return v, n, nil
}

// Read reads a varint from r; io.EOF before the first byte is returned
// as is, io.ErrUnexpectedEOF within the varint.
func Read(r io.ByteReader) (uint64, error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	n := 1 << (first >> 6)
	v := uint64(first & 0x3f)
	for i := 1; i < n; i++ {
		b, err := r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		v = v<<8 | uint64(b)
	}
	return v, nil
}

// A Peeker copies upcoming bytes without consuming them; it returns an
// error when it copies fewer than len(b) bytes.
type Peeker interface {
	Peek(b []byte) (int, error)
}

// Peek decodes the varint at the head of p without consuming it.
func Peek(p Peeker) (uint64, error) {
	var b [8]byte
	if _, err := p.Peek(b[:1]); err != nil {
		return 0, err
	}
	n := 1 << (b[0] >> 6)
	if n > 1 {
		if _, err := p.Peek(b[:n]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	v, _, err := wire.ParseVarint(b[:n])
	return v, err
}

// Reader is an io.Reader that is also an io.ByteReader.
type Reader interface {
	io.ByteReader
	io.Reader
}

// NewReader returns r if it is a Reader already, else r with a ReadByte
// that reads one byte at a time (no read-ahead, so nothing is lost).
func NewReader(r io.Reader) Reader {
	if rr, ok := r.(Reader); ok {
		return rr
	}
	return &byteReader{Reader: r}
}

type byteReader struct {
	io.Reader
	b [1]byte
}

func (r *byteReader) ReadByte() (byte, error) {
	n, err := r.Read(r.b[:])
	if n == 1 {
		return r.b[0], nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return 0, err
}

// Writer is an io.Writer that is also an io.ByteWriter.
type Writer interface {
	io.ByteWriter
	io.Writer
}

// NewWriter returns w if it is a Writer already, else w with a WriteByte.
func NewWriter(w io.Writer) Writer {
	if ww, ok := w.(Writer); ok {
		return ww
	}
	return &byteWriter{Writer: w}
}

type byteWriter struct {
	io.Writer
	b [1]byte
}

func (w *byteWriter) WriteByte(c byte) error {
	w.b[0] = c
	_, err := w.Write(w.b[:])
	return err
}
