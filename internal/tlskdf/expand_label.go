// Package tlskdf implements the TLS 1.3 HKDF-Expand-Label function
// (RFC 8446 section 7.1), which QUIC packet protection (RFC 9001 section 5)
// and the universal token key schedule both build on.
//
// ExpandLabel works with any hash and allocates. For SHA-256, the hash of
// QUIC Initial keys, ExtractSHA256 and ExpanderSHA256 give the same bytes without allocating, for paths that derive keys per
// connection or per packet.
package tlskdf

import (
	"crypto/hkdf"
	"hash"
)

// ExpandLabel returns HKDF-Expand-Label(secret, label, context, length) with
// the "tls13 " prefix that TLS 1.3 and QUIC use.
//
// It allocates; callers derive keys once per connection, epoch or token ID
// and cache the result, never per packet.
func ExpandLabel(newHash func() hash.Hash, secret []byte, label string, context []byte, length int) []byte {
	out, err := hkdf.Expand(newHash, secret, string(HkdfLabel(length, label, context)), length)
	if err != nil {
		// Only reachable when length exceeds 255 hash blocks, which no
		// caller in this module asks for: a programming error.
		panic("tlskdf: " + err.Error())
	}
	return out
}

// HkdfLabel encodes the HkdfLabel structure of RFC 8446 section 7.1:
// uint16 length, opaque label<7..255> ("tls13 " + label), opaque context<0..255>.
func HkdfLabel(length int, label string, context []byte) []byte {
	b := make([]byte, 0, 2+1+len(labelPrefix)+len(label)+1+len(context))
	return appendHkdfLabel(b, length, label, context)
}

// appendHkdfLabel appends the HkdfLabel encoding to b; the caller checks
// that the label and context fit their one-byte length fields.
func appendHkdfLabel(b []byte, length int, label string, context []byte) []byte {
	b = append(b, byte(length>>8), byte(length))
	b = append(b, byte(len(labelPrefix)+len(label)))
	b = append(b, labelPrefix...)
	b = append(b, label...)
	b = append(b, byte(len(context)))
	return append(b, context...)
}
