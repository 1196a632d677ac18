package quictype

import (
	"fmt"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

// StreamID is a QUIC stream ID (RFC 9000 section 2.1).
type StreamID int64

// String returns the ID in decimal.
func (s StreamID) String() string { return fmt.Sprintf("%d", int64(s)) }

// Type returns whether s is a bidirectional or a unidirectional stream.
func (s StreamID) Type() StreamType {
	if s&2 == 0 {
		return StreamTypeBidi
	}
	return StreamTypeUni
}

// StreamType says whether a stream is bidirectional or unidirectional.
type StreamType uint8

// The stream types.
const (
	StreamTypeUni StreamType = iota
	StreamTypeBidi
)

// StreamNum counts the streams of one type and initiator, from 1: MAX_STREAMS
// and STREAMS_BLOCKED frames carry stream numbers.
type StreamNum int64

// Version is a QUIC version number.
type Version = protocol.Version

// The QUIC versions this stack speaks.
const (
	Version1 = protocol.Version1
	Version2 = protocol.Version2
)

// PacketNumber is a QUIC packet number; -1 means none.
type PacketNumber int64

// InvalidPacketNumber stands for a packet without a packet number (Retry,
// Version Negotiation).
const InvalidPacketNumber PacketNumber = -1

// ByteCount is a number of bytes: offsets, flow-control limits, sizes.
type ByteCount int64

// InvalidByteCount stands for an absent byte count.
const InvalidByteCount ByteCount = -1

// KeyPhaseBit is the key phase bit of a short header (RFC 9001 section 6).
type KeyPhaseBit uint8

// The key phase bit values; KeyPhaseUndefined is that of long headers.
const (
	KeyPhaseUndefined KeyPhaseBit = iota
	KeyPhaseZero
	KeyPhaseOne
)

// String returns "0", "1" or "undefined".
func (p KeyPhaseBit) String() string {
	switch p {
	case KeyPhaseZero:
		return "0"
	case KeyPhaseOne:
		return "1"
	}
	return "undefined"
}

// KeyPhase counts 1-RTT key updates, from 0.
type KeyPhase uint64

// Bit returns the key phase bit packets of phase p carry.
func (p KeyPhase) Bit() KeyPhaseBit {
	if p%2 == 0 {
		return KeyPhaseZero
	}
	return KeyPhaseOne
}

// EncryptionLevel is the packet protection a packet or key belongs to.
type EncryptionLevel uint8

// The encryption levels.
const (
	EncryptionInitial EncryptionLevel = 1 + iota
	EncryptionHandshake
	Encryption0RTT
	Encryption1RTT
)

// String returns the level's name.
func (e EncryptionLevel) String() string {
	switch e {
	case EncryptionInitial:
		return "Initial"
	case EncryptionHandshake:
		return "Handshake"
	case Encryption0RTT:
		return "0-RTT"
	case Encryption1RTT:
		return "1-RTT"
	}
	return "unknown"
}

// Perspective says which end of a connection an endpoint is.
type Perspective = protocol.Perspective

// The two perspectives, with quic-go's values.
const (
	PerspectiveServer = protocol.PerspectiveServer
	PerspectiveClient = protocol.PerspectiveClient
)

// TransportErrorCode is a QUIC transport error code (RFC 9000 section 20.1).
type TransportErrorCode uint64

// String returns the RFC name of the code.
func (c TransportErrorCode) String() string { return qerr.TransportErrorCode(c).String() }

// IsCryptoError reports whether c carries a TLS alert (0x100-0x1ff).
func (c TransportErrorCode) IsCryptoError() bool { return qerr.TransportErrorCode(c).IsCryptoError() }

// ApplicationErrorCode is an application-defined error code, carried in
// CONNECTION_CLOSE frames of type 0x1d.
type ApplicationErrorCode uint64

// StreamErrorCode is an application-defined error code carried in
// RESET_STREAM and STOP_SENDING frames.
type StreamErrorCode uint64
