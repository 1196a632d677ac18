// Package tlskdf implements the TLS 1.3 HKDF-Expand-Label function
// (RFC 8446 section 7.1), which QUIC packet protection (RFC 9001 section 5)
// and the universal token key schedule both build on.
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
	const prefix = "tls13 "
	b := make([]byte, 0, 2+1+len(prefix)+len(label)+1+len(context))
	b = append(b, byte(length>>8), byte(length))
	b = append(b, byte(len(prefix)+len(label)))
	b = append(b, prefix...)
	b = append(b, label...)
	b = append(b, byte(len(context)))
	b = append(b, context...)
	return b
}
