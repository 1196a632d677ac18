package http3

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// appendPrefixInt encodes v with an n-bit prefix whose other bits are
// flags (RFC 7541 section 5.1), for building instructions in tests.
func appendPrefixInt(b []byte, flags byte, n uint, v uint64) []byte {
	mask := uint64(1<<n - 1)
	if v < mask {
		return append(b, flags|byte(v))
	}
	b = append(b, flags|byte(mask))
	v -= mask
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func TestReadPrefixInt(t *testing.T) {
	for _, n := range []uint{5, 6, 7} {
		for _, v := range []uint64{0, 1, 1<<n - 2, 1<<n - 1, 1 << n, 300, 1 << 40, maxQPACKInt} {
			b := appendPrefixInt(nil, 0, n, v)
			got, err := readPrefixInt(bytes.NewReader(b[1:]), b[0], n)
			if err != nil || got != v {
				t.Errorf("%d-bit prefix %d: got %d, %v", n, v, got, err)
			}
		}
	}
	tooLarge := [][]byte{
		appendPrefixInt(nil, 0, 6, maxQPACKInt+1),
		append([]byte{0x3f}, bytes.Repeat([]byte{0xff}, 10)...),
	}
	for _, b := range tooLarge {
		if _, err := readPrefixInt(bytes.NewReader(b[1:]), b[0], 6); !errors.Is(err, errQPACKIntTooLarge) {
			t.Errorf("%x: %v, want errQPACKIntTooLarge", b, err)
		}
	}
}

func TestQPACKEncoderStream(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		code ErrCode
	}{
		{"capacity 0, then the end", []byte{0x20, 0x20}, ErrCodeClosedCriticalStream},
		{"nothing, then the end", nil, ErrCodeClosedCriticalStream},
		{"capacity 1", []byte{0x21}, ErrCodeQPACKEncoderStreamError},
		{"capacity 4096", appendPrefixInt(nil, 0x20, 5, 4096), ErrCodeQPACKEncoderStreamError},
		{"capacity of 31 or more, truncated", []byte{0x3f}, ErrCodeQPACKEncoderStreamError},
		{"insert with static name reference", []byte{0xc0 | 17, 0x03, 'G', 'E', 'T'}, ErrCodeQPACKEncoderStreamError},
		{"insert with dynamic name reference", []byte{0x80}, ErrCodeQPACKEncoderStreamError},
		{"insert with literal name", []byte{0x43, 'f', 'o', 'o', 0x01, 'x'}, ErrCodeQPACKEncoderStreamError},
		{"duplicate", []byte{0x00}, ErrCodeQPACKEncoderStreamError},
		{"duplicate, truncated index", []byte{0x1f}, ErrCodeQPACKEncoderStreamError},
		{"capacity 0 after capacity 0", []byte{0x20, 0x20, 0x22}, ErrCodeQPACKEncoderStreamError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, readEncoderStream(bufio.NewReader(bytes.NewReader(c.in))), c.code)
		})
	}
	// A read error that is not the stream's end (the connection closed)
	// is no error to report.
	if err := readEncoderStream(bufio.NewReader(&failingReader{err: errors.New("connection closed")})); err != nil {
		t.Fatalf("after a connection error: %v", err)
	}
}

func TestQPACKDecoderStream(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		code ErrCode
	}{
		{"stream cancellations", concat(appendPrefixInt(nil, 0x40, 6, 0), appendPrefixInt(nil, 0x40, 6, 1<<30)), ErrCodeClosedCriticalStream},
		{"section acknowledgment", appendPrefixInt(nil, 0x80, 7, 4), ErrCodeQPACKDecoderStreamError},
		{"insert count increment 1", []byte{0x01}, ErrCodeQPACKDecoderStreamError},
		{"insert count increment 0", []byte{0x00}, ErrCodeQPACKDecoderStreamError},
		{"truncated stream cancellation", []byte{0x7f}, ErrCodeClosedCriticalStream},
		{"stream ID over 62 bits", appendPrefixInt(nil, 0x40, 6, maxQPACKInt+1), ErrCodeQPACKDecoderStreamError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, readDecoderStream(bufio.NewReader(bytes.NewReader(c.in))), c.code)
		})
	}
}

// qpackStreamSeeds are inputs for the QPACK stream fuzz targets: valid
// instructions, each invalid kind and truncated integers.
func qpackStreamSeeds() [][]byte {
	return [][]byte{
		{0x20, 0x20, 0x20},
		appendPrefixInt(nil, 0x20, 5, 4096),
		{0xc0 | 17, 0x03, 'G', 'E', 'T'},
		{0x43, 'f', 'o', 'o', 0x01, 'x'},
		{0x00},
		appendPrefixInt(appendPrefixInt(nil, 0x40, 6, 7), 0x40, 6, 1<<20),
		appendPrefixInt(nil, 0x80, 7, 4),
		{0x01},
		{0x3f, 0xff, 0xff},
		append([]byte{0x7f}, bytes.Repeat([]byte{0x80}, 12)...),
	}
}

// checkQPACKStreamResult fails unless err is the end of the stream
// (H3_CLOSED_CRITICAL_STREAM, the input ran out) or want.
func checkQPACKStreamResult(t *testing.T, err error, want ErrCode) ErrCode {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Remote || (e.ErrorCode != ErrCodeClosedCriticalStream && e.ErrorCode != want) {
		t.Fatalf("error %v (%T), want a local %s or %s", err, err, ErrCodeClosedCriticalStream, want)
	}
	return e.ErrorCode
}

// FuzzQPACKEncoderStream: on our encoder-stream reader the only valid
// instruction is Set Dynamic Table Capacity 0 (the single byte 0x20: a
// 5-bit prefix cannot encode 0 in more bytes), so an input is accepted up
// to its end exactly when it consists of 0x20 bytes.
func FuzzQPACKEncoderStream(f *testing.F) {
	for _, s := range qpackStreamSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		code := checkQPACKStreamResult(t, readEncoderStream(bufio.NewReader(bytes.NewReader(data))), ErrCodeQPACKEncoderStreamError)
		valid := len(bytes.Trim(data, "\x20")) == 0
		if valid != (code == ErrCodeClosedCriticalStream) {
			t.Fatalf("%x: %s, but valid=%v", data, code, valid)
		}
	})
}

// FuzzQPACKDecoderStream feeds arbitrary bytes to the decoder-stream
// reader, and also the same bytes read as stream IDs encoded as Stream
// Cancellations, which must all be accepted.
func FuzzQPACKDecoderStream(f *testing.F) {
	for _, s := range qpackStreamSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkQPACKStreamResult(t, readDecoderStream(bufio.NewReader(bytes.NewReader(data))), ErrCodeQPACKDecoderStreamError)
		var cancels []byte
		for i := 0; i+8 <= len(data); i += 8 {
			id := uint64(0)
			for _, b := range data[i : i+8] {
				id = id<<8 | uint64(b)
			}
			cancels = appendPrefixInt(cancels, 0x40, 6, id&maxQPACKInt)
		}
		if code := checkQPACKStreamResult(t, readDecoderStream(bufio.NewReader(bytes.NewReader(cancels))), ErrCodeQPACKDecoderStreamError); code != ErrCodeClosedCriticalStream {
			t.Fatalf("stream cancellations %x rejected with %s", cancels, code)
		}
	})
}
