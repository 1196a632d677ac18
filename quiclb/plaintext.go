package quiclb

import (
	"errors"
	"fmt"
)

// QUIC-LB limits (draft-ietf-quic-load-balancers, "Server ID Encoding in
// Connection IDs").
const (
	// MaxLen is the longest connection ID of QUIC version 1.
	MaxLen = 20
	// MinNonceLen is the shortest nonce the draft allows.
	MinNonceLen = 4
	// MaxPlaintextLen bounds server ID plus nonce.
	MaxPlaintextLen = 19
	// UnroutableConfigID is the reserved codepoint 0b111 a server without
	// configuration puts in the first octet: such IDs route nowhere.
	UnroutableConfigID = 7
)

// Errors of parsing, wrapped with detail; match them with errors.Is.
var (
	// ErrLength: the ID is not as long as the configuration or its first
	// octet says.
	ErrLength = errors.New("quiclb: connection ID length")
	// ErrConfigID: the first octet names another configuration, or the
	// unroutable one.
	ErrConfigID = errors.New("quiclb: config rotation codepoint")
	// ErrMAC: the MAC does not verify.
	ErrMAC = errors.New("quiclb: MAC does not verify")
)

// FirstOctet returns the first octet of a QUIC-LB ID of cidLen bytes under
// configuration configID: the codepoint in the three high bits, and, in the
// five low bits, the length of the ID after this octet (the draft's length
// self-description, which this package always uses).
func FirstOctet(configID uint8, cidLen int) byte {
	return configID<<5 | byte(cidLen-1)&0x1f
}

// AppendPlaintext appends the QUIC-LB ID of the draft's plaintext
// (unencrypted) algorithm: the first octet, serverID, nonce. serverID must
// have at least 1 byte, nonce at least MinNonceLen, together at most
// MaxPlaintextLen; configID must be 0..6.
func AppendPlaintext(dst []byte, configID uint8, serverID, nonce []byte) ([]byte, error) {
	switch {
	case configID >= UnroutableConfigID:
		return dst, fmt.Errorf("%w: %d, want 0..6", ErrConfigID, configID)
	case len(serverID) < 1 || len(nonce) < MinNonceLen || len(serverID)+len(nonce) > MaxPlaintextLen:
		return dst, fmt.Errorf("%w: server ID %d and nonce %d bytes (want >= 1, >= %d, sum <= %d)",
			ErrLength, len(serverID), len(nonce), MinNonceLen, MaxPlaintextLen)
	}
	dst = append(dst, FirstOctet(configID, 1+len(serverID)+len(nonce)))
	dst = append(dst, serverID...)
	return append(dst, nonce...), nil
}

// ParsePlaintext splits a plaintext QUIC-LB ID with a server ID of
// serverIDLen bytes, as a load balancer does. It checks the self-encoded
// length and refuses the unroutable codepoint; serverID and nonce alias cid.
func ParsePlaintext(cid []byte, serverIDLen int) (configID uint8, serverID, nonce []byte, err error) {
	if len(cid) < 1 || len(cid) > MaxLen {
		return 0, nil, nil, fmt.Errorf("%w: %d bytes", ErrLength, len(cid))
	}
	configID = cid[0] >> 5
	if configID == UnroutableConfigID {
		return configID, nil, nil, fmt.Errorf("%w: unroutable (0b111)", ErrConfigID)
	}
	if n := int(cid[0]&0x1f) + 1; n != len(cid) {
		return configID, nil, nil, fmt.Errorf("%w: first octet says %d bytes, ID has %d", ErrLength, n, len(cid))
	}
	if serverIDLen < 1 || len(cid)-1-serverIDLen < MinNonceLen {
		return configID, nil, nil, fmt.Errorf("%w: %d bytes cannot hold a %d-byte server ID and a nonce", ErrLength, len(cid), serverIDLen)
	}
	return configID, cid[1 : 1+serverIDLen], cid[1+serverIDLen:], nil
}
