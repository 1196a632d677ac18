package announce

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Wire format constants (doc.go has the layout).
const (
	// Magic starts every message.
	Magic = "TRCA"
	// Version is the format version this package writes and accepts.
	Version = 1
	// MaxMessageSize bounds a message, so that it never needs IP
	// fragmentation on any link QUIC itself can use.
	MaxMessageSize = 1200
	// MaxCIDLen is the longest connection ID QUIC allows (RFC 9000).
	MaxCIDLen = 20
	// HeaderLen is the length of the fixed header before the CIDs.
	HeaderLen = 16
	// MACLen is the length of the truncated HMAC-SHA256 tag.
	MACLen = 16
)

// MaxCIDsPerMessage returns how many connection IDs of length cidLen fit in
// one message, or 0 when cidLen is outside 1..MaxCIDLen.
func MaxCIDsPerMessage(cidLen int) int {
	if cidLen < 1 || cidLen > MaxCIDLen {
		return 0
	}
	return (MaxMessageSize - HeaderLen - MACLen) / cidLen
}

// message is a parsed, not yet authenticated announcement. Its slices alias
// the datagram.
type message struct {
	cidLen    int
	count     int
	timestamp uint64 // Unix milliseconds
	cids      []byte // count*cidLen bytes
	body      []byte // everything the MAC covers
	mac       []byte // MACLen bytes
}

// parseMessage checks the framing of b: everything but the connection ID
// length the receiver expects, the MAC and the timestamp.
func parseMessage(b []byte) (message, Reason) {
	if len(b) < HeaderLen+MACLen {
		return message{}, ReasonShort
	}
	if string(b[:4]) != Magic {
		return message{}, ReasonMagic
	}
	if b[4] != Version {
		return message{}, ReasonVersion
	}
	m := message{
		cidLen:    int(b[5]),
		count:     int(binary.BigEndian.Uint16(b[6:8])),
		timestamp: binary.BigEndian.Uint64(b[8:16]),
	}
	if len(b) > MaxMessageSize || m.cidLen < 1 || m.cidLen > MaxCIDLen || m.count < 1 ||
		len(b) != HeaderLen+m.count*m.cidLen+MACLen {
		return message{}, ReasonMalformed
	}
	end := len(b) - MACLen
	m.cids = b[HeaderLen:end]
	m.body = b[:end]
	m.mac = b[end:]
	return m, ReasonNone
}

// appendMessage appends a message carrying cids (a whole number of
// cidLen-byte IDs, at most MaxCIDsPerMessage(cidLen) of them) to dst.
func appendMessage(dst []byte, mac *macState, key *[32]byte, cidLen int, timestampMs uint64, cids []byte) []byte {
	start := len(dst)
	dst = append(dst, Magic...)
	dst = append(dst, Version, byte(cidLen))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(cids)/cidLen))
	dst = binary.BigEndian.AppendUint64(dst, timestampMs)
	dst = append(dst, cids...)
	return append(dst, mac.sum(key, dst[start:])...)
}

// macState is a reusable HMAC-SHA256 for one key at a time: rebuilt when
// the key changes, otherwise Reset, so that steady-state messages do not
// allocate. Not safe for concurrent use.
type macState struct {
	key [32]byte
	h   hash.Hash
	out [sha256.Size]byte
}

// sum returns the truncated tag of body under key. The result aliases the
// state and is valid until the next call.
func (m *macState) sum(key *[32]byte, body []byte) []byte {
	if m.h == nil || m.key != *key {
		m.key = *key
		m.h = hmac.New(sha256.New, m.key[:])
	} else {
		m.h.Reset()
	}
	m.h.Write(body)
	return m.h.Sum(m.out[:0])[:MACLen]
}
