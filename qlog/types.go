// Package qlog defines QUIC's qlog events (draft-ietf-quic-qlog-quic-events)
// with the names and shapes of quic-go's qlog package: a connection with a
// Config.Tracer records them into a qlogwriter.Trace, and
// DefaultConnectionTracer writes one JSON-SEQ file per connection into
// $QLOGDIR.
package qlog

import (
	"fmt"
	"hash/crc32"

	"github.com/turboretry/turboretry/quic/quictype"
)

// The value types events carry, shared with package quic.
type (
	ConnectionID             = quictype.ConnectionID
	ArbitraryLenConnectionID = quictype.ArbitraryLenConnectionID
	Version                  = quictype.Version
	PacketNumber             = quictype.PacketNumber
	ByteCount                = quictype.ByteCount
	EncryptionLevel          = quictype.EncryptionLevel
	KeyPhaseBit              = quictype.KeyPhaseBit
	KeyPhase                 = quictype.KeyPhase
	StreamID                 = quictype.StreamID
	StreamType               = quictype.StreamType
	StreamNum                = quictype.StreamNum
	StatelessResetToken      = quictype.StatelessResetToken
	Perspective              = quictype.Perspective
	TransportErrorCode       = quictype.TransportErrorCode
	ApplicationErrorCode     = quictype.ApplicationErrorCode
	StreamErrorCode          = quictype.StreamErrorCode
)

// Key phase bits and stream types.
const (
	KeyPhaseZero   = quictype.KeyPhaseZero
	KeyPhaseOne    = quictype.KeyPhaseOne
	StreamTypeUni  = quictype.StreamTypeUni
	StreamTypeBidi = quictype.StreamTypeBidi
)

// ECN is the ECN codepoint of a packet.
type ECN string

// ECN codepoints; ECNUnsupported means the socket reports none.
const (
	ECNUnsupported ECN = ""
	ECTNot         ECN = "Not-ECT"
	ECT0           ECN = "ECT(0)"
	ECT1           ECN = "ECT(1)"
	ECNCE          ECN = "CE"
)

// Initiator says which side caused an event.
type Initiator string

// The initiators.
const (
	InitiatorLocal  Initiator = "local"
	InitiatorRemote Initiator = "remote"
)

// Direction is sending or receiving.
type Direction string

// The directions.
const (
	DirectionSending   Direction = "sending"
	DirectionReceiving Direction = "receiving"
)

// KeyType names a TLS secret.
type KeyType string

// The key types.
const (
	KeyTypeServerInitial   KeyType = "server_initial_secret"
	KeyTypeClientInitial   KeyType = "client_initial_secret"
	KeyTypeServerHandshake KeyType = "server_handshake_secret"
	KeyTypeClientHandshake KeyType = "client_handshake_secret"
	KeyTypeServer0RTT      KeyType = "server_0rtt_secret"
	KeyTypeClient0RTT      KeyType = "client_0rtt_secret"
	KeyTypeServer1RTT      KeyType = "server_1rtt_secret"
	KeyTypeClient1RTT      KeyType = "client_1rtt_secret"
)

// KeyUpdateTrigger says why keys changed.
type KeyUpdateTrigger string

// The key update triggers.
const (
	KeyUpdateTLS    KeyUpdateTrigger = "tls"
	KeyUpdateRemote KeyUpdateTrigger = "remote_update"
	KeyUpdateLocal  KeyUpdateTrigger = "local_update"
)

// PacketType is a packet's type as qlog names it.
type PacketType string

// The packet types.
const (
	PacketTypeInitial            PacketType = "initial"
	PacketTypeHandshake          PacketType = "handshake"
	PacketTypeRetry              PacketType = "retry"
	PacketType0RTT               PacketType = "0RTT"
	PacketTypeVersionNegotiation PacketType = "version_negotiation"
	PacketTypeStatelessReset     PacketType = "stateless_reset"
	PacketType1RTT               PacketType = "1RTT"
	PacketTypeUnknown            PacketType = "unknown"
)

// EncryptionLevelToPacketType returns the type of packets of level l.
func EncryptionLevelToPacketType(l EncryptionLevel) PacketType {
	switch l {
	case quictype.EncryptionInitial:
		return PacketTypeInitial
	case quictype.EncryptionHandshake:
		return PacketTypeHandshake
	case quictype.Encryption0RTT:
		return PacketType0RTT
	case quictype.Encryption1RTT:
		return PacketType1RTT
	}
	return PacketTypeUnknown
}

// PacketLossReason says why a packet was declared lost.
type PacketLossReason string

// The loss reasons (RFC 9002 section 6.1).
const (
	PacketLossReorderingThreshold PacketLossReason = "reordering_threshold"
	PacketLossTimeThreshold       PacketLossReason = "time_threshold"
)

// PacketDropReason says why a received packet was dropped.
type PacketDropReason string

// The drop reasons.
const (
	PacketDropKeysUnavailable              PacketDropReason = "keys_unavailable"
	PacketDropUnknownConnectionID          PacketDropReason = "unknown_connection_id"
	PacketDropHeaderParseError             PacketDropReason = "header_parse_error"
	PacketDropPayloadDecryptError          PacketDropReason = "payload_decrypt_error"
	PacketDropProtocolViolation            PacketDropReason = "protocol_violation"
	PacketDropDOSPrevention                PacketDropReason = "dos_prevention"
	PacketDropUnsupportedVersion           PacketDropReason = "unsupported_version"
	PacketDropUnexpectedPacket             PacketDropReason = "unexpected_packet"
	PacketDropUnexpectedSourceConnectionID PacketDropReason = "unexpected_source_connection_id"
	PacketDropUnexpectedVersion            PacketDropReason = "unexpected_version"
	PacketDropDuplicate                    PacketDropReason = "duplicate"
)

// trigger maps a drop reason to the trigger values of the qlog draft.
func (r PacketDropReason) trigger() string {
	switch r {
	case PacketDropKeysUnavailable:
		return "keys_unavailable"
	case PacketDropUnknownConnectionID:
		return "connection_unknown"
	case PacketDropPayloadDecryptError:
		return "decryption_failure"
	case PacketDropDOSPrevention:
		return "rejected"
	case PacketDropUnsupportedVersion:
		return "unsupported"
	case PacketDropDuplicate:
		return "duplicate"
	case PacketDropHeaderParseError, PacketDropProtocolViolation, PacketDropUnexpectedPacket,
		PacketDropUnexpectedSourceConnectionID, PacketDropUnexpectedVersion:
		return "invalid"
	}
	return "general"
}

// TimerEventType says what happened to a timer.
type TimerEventType string

// The timer event types.
const (
	TimerEventTypeSet       TimerEventType = "set"
	TimerEventTypeExpired   TimerEventType = "expired"
	TimerEventTypeCancelled TimerEventType = "cancelled"
)

// TimerType names a loss-recovery timer.
type TimerType string

// The timer types.
const (
	TimerTypeACK       TimerType = "ack"
	TimerTypePTO       TimerType = "pto"
	TimerTypePathProbe TimerType = "path_probe"
)

// ConnectionState is a step of a connection's life.
type ConnectionState string

// The connection states, in order.
const (
	// ConnectionStateAttempted: the first Initial was sent (client) or
	// received (server).
	ConnectionStateAttempted ConnectionState = "attempted"
	// ConnectionStateHandshakeStarted: Handshake keys are installed.
	ConnectionStateHandshakeStarted ConnectionState = "handshake_started"
	// ConnectionStateHandshakeComplete: the TLS handshake completed.
	ConnectionStateHandshakeComplete ConnectionState = "handshake_complete"
	// ConnectionStateHandshakeConfirmed: the handshake is confirmed
	// (RFC 9001 section 4.1.2).
	ConnectionStateHandshakeConfirmed ConnectionState = "handshake_confirmed"
	// ConnectionStateClosed: the connection ended.
	ConnectionStateClosed ConnectionState = "closed"
)

// CongestionState is the congestion controller's phase.
type CongestionState string

// The congestion states.
const (
	CongestionStateSlowStart           CongestionState = "slow_start"
	CongestionStateCongestionAvoidance CongestionState = "congestion_avoidance"
	CongestionStateRecovery            CongestionState = "recovery"
	CongestionStateApplicationLimited  CongestionState = "application_limited"
)

// String returns the state's name.
func (s CongestionState) String() string { return string(s) }

// ECNState is the state of ECN validation (RFC 9000 appendix A.4).
type ECNState string

// The ECN states.
const (
	ECNStateTesting ECNState = "testing"
	ECNStateUnknown ECNState = "unknown"
	ECNStateFailed  ECNState = "failed"
	ECNStateCapable ECNState = "capable"
)

// ConnectionCloseTrigger says why a connection closed, where no error code
// says it.
type ConnectionCloseTrigger string

// The close triggers.
const (
	ConnectionCloseTriggerIdleTimeout     ConnectionCloseTrigger = "idle_timeout"
	ConnectionCloseTriggerApplication     ConnectionCloseTrigger = "application"
	ConnectionCloseTriggerVersionMismatch ConnectionCloseTrigger = "version_mismatch"
	ConnectionCloseTriggerStatelessReset  ConnectionCloseTrigger = "stateless_reset"
)

// DatagramPayloadChecksum is the CRC-32C of a UDP datagram's payload; it
// ties the packets coalesced in one datagram together. Zero means absent.
type DatagramPayloadChecksum uint32

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CalculateDatagramPayloadChecksum returns the checksum of payload.
func CalculateDatagramPayloadChecksum(payload []byte) DatagramPayloadChecksum {
	return DatagramPayloadChecksum(crc32.Checksum(payload, castagnoli))
}

// transportErrorName returns the qlog name of a transport error code, ""
// for codes without one.
func transportErrorName(c TransportErrorCode) string {
	if c.IsCryptoError() {
		return fmt.Sprintf("crypto_error_%#x", uint16(c))
	}
	names := [...]string{
		"no_error", "internal_error", "connection_refused", "flow_control_error",
		"stream_limit_error", "stream_state_error", "final_size_error", "frame_encoding_error",
		"transport_parameter_error", "connection_id_limit_error", "protocol_violation",
		"invalid_token", "application_error", "crypto_buffer_exceeded", "key_update_error",
		"aead_limit_reached", "no_viable_path",
	}
	if c < TransportErrorCode(len(names)) {
		return names[c]
	}
	return ""
}

// versionHex is the qlog spelling of a version: hexadecimal, no prefix.
func versionHex(v Version) string { return fmt.Sprintf("%x", uint32(v)) }
