package connid

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
)

// Stateless reset sizes (RFC 9000 section 10.3).
const (
	// MinStatelessResetSize is the smallest Stateless Reset: 5 bytes
	// holding at least 38 unpredictable bits after the two fixed header
	// bits, then the 16-byte token.
	MinStatelessResetSize = 5 + TokenLen
	// shortResetTrigger is the trigger size up to which RFC 9000 section
	// 10.3 asks for a reset exactly one byte shorter than the trigger.
	shortResetTrigger = 43
	// MaxStatelessResetSize caps the resets this package sizes: past 42
	// bytes a reset is already indistinguishable from a short header
	// packet, so a larger one only costs bandwidth.
	MaxStatelessResetSize = 64
)

// ErrResetTooSmall is returned by AppendStatelessReset for a size below
// MinStatelessResetSize.
var ErrResetTooSmall = errors.New("connid: stateless reset shorter than 21 bytes")

// StatelessResetSize returns the size of the Stateless Reset to send in
// reply to a datagram of triggerLen bytes. ok is false when none may be
// sent: a reset must be smaller than its trigger to prevent two endpoints
// from resetting each other forever (RFC 9000 section 10.3.3) and at least
// MinStatelessResetSize, so a trigger of 21 bytes or fewer gets nothing.
// Triggers up to 43 bytes get a reset one byte shorter (RFC 9000 section
// 10.3); longer ones get min(triggerLen-1, MaxStatelessResetSize).
func StatelessResetSize(triggerLen int) (size int, ok bool) {
	if triggerLen <= MinStatelessResetSize {
		return 0, false
	}
	if triggerLen <= shortResetTrigger {
		return triggerLen - 1, true
	}
	return min(triggerLen-1, MaxStatelessResetSize), true
}

// AppendStatelessReset appends a Stateless Reset of size bytes carrying
// token to b. It looks like a short header packet: the first byte is
// 0b01 followed by six random bits, then random bytes, then the token
// (RFC 9000 section 10.3). On error b is returned unchanged.
func AppendStatelessReset(b []byte, token [TokenLen]byte, size int) ([]byte, error) {
	if size < MinStatelessResetSize {
		return b, ErrResetTooSmall
	}
	start := len(b)
	b = append(b, make([]byte, size-TokenLen)...)
	rand.Read(b[start:]) // never fails since Go 1.24
	b[start] = 0x40 | b[start]&0x3f
	return append(b, token[:]...), nil
}

// ResetDetector holds the stateless reset tokens a connection must watch
// for: those of the peer's connection IDs it has used and not retired
// (RFC 9000 section 10.3.1). The zero value is empty and ready to use.
type ResetDetector struct {
	tokens [][TokenLen]byte
}

// Add starts watching for token; adding a token twice has no effect.
func (d *ResetDetector) Add(token [TokenLen]byte) {
	for _, t := range d.tokens {
		if t == token {
			return
		}
	}
	d.tokens = append(d.tokens, token)
}

// Remove stops watching for token and reports whether it was watched.
func (d *ResetDetector) Remove(token [TokenLen]byte) bool {
	for i, t := range d.tokens {
		if t == token {
			last := len(d.tokens) - 1
			d.tokens[i] = d.tokens[last]
			d.tokens = d.tokens[:last]
			return true
		}
	}
	return false
}

// Len returns the number of watched tokens.
func (d *ResetDetector) Len() int { return len(d.tokens) }

// Clear stops watching all tokens.
func (d *ResetDetector) Clear() { d.tokens = d.tokens[:0] }

// IsStatelessReset reports whether datagram ends in a watched token. Every
// token is compared in constant time and the loop does not stop at a
// match, so timing reveals nothing about token values (RFC 9000 section
// 10.3.1). The header is not checked: other QUIC versions may send resets
// that look like long header packets. Datagrams shorter than
// MinStatelessResetSize cannot be resets.
func (d *ResetDetector) IsStatelessReset(datagram []byte) bool {
	if len(datagram) < MinStatelessResetSize {
		return false
	}
	tail := datagram[len(datagram)-TokenLen:]
	match := 0
	for i := range d.tokens {
		match |= subtle.ConstantTimeCompare(tail, d.tokens[i][:])
	}
	return match == 1
}
