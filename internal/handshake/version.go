package handshake

import (
	"fmt"

	"github.com/turboretry/turboretry/internal/protocol"
)

// Version is the QUIC version whose packet protection applies; the type
// is declared once, in internal/protocol.
type Version = protocol.Version

// The QUIC versions this package protects packets for.
const (
	// Version1 is QUIC version 1 (RFC 9000, RFC 9001).
	Version1 = protocol.Version1
	// Version2 is QUIC version 2 (RFC 9369).
	Version2 = protocol.Version2
)

// MaxConnectionIDLen is the longest connection ID QUIC v1 and v2 allow.
const MaxConnectionIDLen = protocol.MaxConnectionIDLen

// versionParams holds what changes between QUIC versions in packet
// protection: the Initial salt, the HKDF labels and the Retry AEAD inputs.
type versionParams struct {
	salt       []byte
	keyLabel   string
	ivLabel    string
	hpLabel    string
	kuLabel    string
	retryKey   []byte
	retryNonce []byte
}

var (
	// RFC 9001 section 5.2 and 5.8.
	v1Params = versionParams{
		salt:       []byte{0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a},
		keyLabel:   "quic key",
		ivLabel:    "quic iv",
		hpLabel:    "quic hp",
		kuLabel:    "quic ku",
		retryKey:   []byte{0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e},
		retryNonce: []byte{0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb},
	}
	// RFC 9369 section 3.3.
	v2Params = versionParams{
		salt:       []byte{0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9},
		keyLabel:   "quicv2 key",
		ivLabel:    "quicv2 iv",
		hpLabel:    "quicv2 hp",
		kuLabel:    "quicv2 ku",
		retryKey:   []byte{0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92},
		retryNonce: []byte{0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a},
	}
)

// paramsFor returns what packet protection changes for version v.
func paramsFor(v Version) (*versionParams, error) {
	switch v {
	case Version1:
		return &v1Params, nil
	case Version2:
		return &v2Params, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupportedVersion, v)
}
