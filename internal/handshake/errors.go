package handshake

import "errors"

// Sentinel errors. The per-packet paths return these values unwrapped so
// that a failure costs no allocation; setup paths may wrap them with
// detail (test with errors.Is).
var (
	// ErrDecryptionFailed reports that AEAD authentication of a packet
	// failed: a forged, corrupted or misrouted packet, or a wrong key.
	ErrDecryptionFailed = errors.New("handshake: packet authentication failed")
	// ErrPacketTooShort reports a packet that cannot hold the header
	// protection sample (4 bytes after the packet number offset, then 16)
	// or an authentication tag.
	ErrPacketTooShort = errors.New("handshake: packet too short to protect or unprotect")
	// ErrInvalidPacketNumberOffset reports a packet number offset outside
	// the packet, or one that leaves no room for the first byte.
	ErrInvalidPacketNumberOffset = errors.New("handshake: packet number offset outside the packet")
	// ErrInvalidPacketNumberLength reports a packet number length other
	// than 1 to 4, or one that disagrees with the first byte's low bits.
	ErrInvalidPacketNumberLength = errors.New("handshake: invalid packet number length")
	// ErrUnsupportedVersion reports a QUIC version other than 1 and 2.
	ErrUnsupportedVersion = errors.New("handshake: unsupported QUIC version")
	// ErrUnsupportedCipherSuite reports a TLS cipher suite QUIC cannot use.
	ErrUnsupportedCipherSuite = errors.New("handshake: unsupported cipher suite")
	// ErrInvalidSecret reports a traffic secret whose length is not the
	// cipher suite's hash length.
	ErrInvalidSecret = errors.New("handshake: traffic secret has the wrong length")
	// ErrConnectionIDTooLong reports a connection ID over 20 bytes.
	ErrConnectionIDTooLong = errors.New("handshake: connection ID longer than 20 bytes")
	// ErrRetryIntegrity reports a Retry packet whose integrity tag does
	// not match; the client discards such a Retry (RFC 9000 section 17.2.5.2).
	ErrRetryIntegrity = errors.New("handshake: Retry integrity tag mismatch")
	// ErrKeysDiscarded reports a packet that needs the previous 1-RTT keys
	// after AppKeys.DropPreviousKeys discarded them.
	ErrKeysDiscarded = errors.New("handshake: previous key phase keys discarded")
	// ErrKeyUpdateTooSoon reports an authentic 1-RTT packet with the next
	// keys from a peer that updated keys again before it could have seen
	// an acknowledgment in the current key phase (RFC 9001 section 6.2):
	// a connection error of type KEY_UPDATE_ERROR.
	ErrKeyUpdateTooSoon = errors.New("handshake: peer updated keys again before an acknowledgment in the current key phase")
	// ErrKeysNotReady reports 1-RTT use before the needed traffic secret
	// was installed.
	ErrKeysNotReady = errors.New("handshake: 1-RTT keys not installed yet")
	// ErrKeysAlreadySet reports a second installation of a 1-RTT secret.
	ErrKeysAlreadySet = errors.New("handshake: 1-RTT secret already installed")
)
