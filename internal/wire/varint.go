package wire

import "errors"

// MaxVarint is the largest value a variable-length integer can hold, 2^62-1.
const MaxVarint = 1<<62 - 1

// ErrVarintTruncated is returned when a buffer ends inside a variable-length integer.
var ErrVarintTruncated = errors.New("wire: truncated variable-length integer")

// VarintLen returns the number of bytes of the minimal encoding of v.
// Values above MaxVarint cannot be encoded; VarintLen returns 8 for them
// and the Append functions panic.
func VarintLen(v uint64) int {
	switch {
	case v <= 63:
		return 1
	case v <= 16383:
		return 2
	case v <= 1<<30-1:
		return 4
	default:
		return 8
	}
}

// AppendVarint appends the minimal encoding of v (RFC 9000 section 16).
// It panics if v exceeds MaxVarint: callers must never produce such values.
func AppendVarint(b []byte, v uint64) []byte {
	switch {
	case v <= 63:
		return append(b, byte(v))
	case v <= 16383:
		return append(b, 0x40|byte(v>>8), byte(v))
	case v <= 1<<30-1:
		return append(b, 0x80|byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	case v <= MaxVarint:
		return append(b, 0xc0|byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
			byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	panic("wire: varint value exceeds 2^62-1")
}

// AppendVarintWithLen appends v encoded in exactly n bytes (1, 2, 4 or 8).
// Length fields written before their value is known use it as a
// placeholder that PutVarintWithLen later fills in. It panics if n is not a
// valid length or v does not fit.
func AppendVarintWithLen(b []byte, v uint64, n int) []byte {
	start := len(b)
	b = append(b, make([]byte, n)...)
	PutVarintWithLen(b[start:], v, n)
	return b
}

// PutVarintWithLen writes v into b[:n] using exactly n bytes (1, 2, 4 or 8).
// It panics if n is not a valid length, v does not fit or b is too short.
func PutVarintWithLen(b []byte, v uint64, n int) {
	var prefix byte
	switch n {
	case 1:
		prefix = 0x00
	case 2:
		prefix = 0x40
	case 4:
		prefix = 0x80
	case 8:
		prefix = 0xc0
	default:
		panic("wire: invalid varint length")
	}
	if VarintLen(v) > n || v > MaxVarint {
		panic("wire: varint value does not fit the requested length")
	}
	_ = b[n-1]
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	b[0] |= prefix
}

// ParseVarint decodes the variable-length integer at the start of b and
// returns its value and the number of bytes it occupies. Non-minimal
// encodings are accepted, as RFC 9000 section 16 allows.
func ParseVarint(b []byte) (v uint64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, ErrVarintTruncated
	}
	n = 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, ErrVarintTruncated
	}
	v = uint64(b[0] & 0x3f)
	for i := 1; i < n; i++ {
		v = v<<8 | uint64(b[i])
	}
	return v, n, nil
}
