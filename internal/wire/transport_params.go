package wire

import (
	"net/netip"
	"time"
)

// Transport parameter IDs (RFC 9000 section 18.2, RFC 9221 section 3,
// RFC 9368 section 10.1, draft-ietf-quic-reliable-stream-reset section 3).
const (
	tpOriginalDestinationConnectionID uint64 = 0x00
	tpMaxIdleTimeout                  uint64 = 0x01
	tpStatelessResetToken             uint64 = 0x02
	tpMaxUDPPayloadSize               uint64 = 0x03
	tpInitialMaxData                  uint64 = 0x04
	tpInitialMaxStreamDataBidiLocal   uint64 = 0x05
	tpInitialMaxStreamDataBidiRemote  uint64 = 0x06
	tpInitialMaxStreamDataUni         uint64 = 0x07
	tpInitialMaxStreamsBidi           uint64 = 0x08
	tpInitialMaxStreamsUni            uint64 = 0x09
	tpAckDelayExponent                uint64 = 0x0a
	tpMaxAckDelay                     uint64 = 0x0b
	tpDisableActiveMigration          uint64 = 0x0c
	tpPreferredAddress                uint64 = 0x0d
	tpActiveConnectionIDLimit         uint64 = 0x0e
	tpInitialSourceConnectionID       uint64 = 0x0f
	tpRetrySourceConnectionID         uint64 = 0x10
	tpVersionInformation              uint64 = 0x11
	tpResetStreamAt                   uint64 = 0x1d
	tpMaxDatagramFrameSize            uint64 = 0x20
)

var tpNames = map[uint64]string{
	tpOriginalDestinationConnectionID: "original_destination_connection_id",
	tpMaxIdleTimeout:                  "max_idle_timeout",
	tpStatelessResetToken:             "stateless_reset_token",
	tpMaxUDPPayloadSize:               "max_udp_payload_size",
	tpInitialMaxData:                  "initial_max_data",
	tpInitialMaxStreamDataBidiLocal:   "initial_max_stream_data_bidi_local",
	tpInitialMaxStreamDataBidiRemote:  "initial_max_stream_data_bidi_remote",
	tpInitialMaxStreamDataUni:         "initial_max_stream_data_uni",
	tpInitialMaxStreamsBidi:           "initial_max_streams_bidi",
	tpInitialMaxStreamsUni:            "initial_max_streams_uni",
	tpAckDelayExponent:                "ack_delay_exponent",
	tpMaxAckDelay:                     "max_ack_delay",
	tpDisableActiveMigration:          "disable_active_migration",
	tpPreferredAddress:                "preferred_address",
	tpActiveConnectionIDLimit:         "active_connection_id_limit",
	tpInitialSourceConnectionID:       "initial_source_connection_id",
	tpRetrySourceConnectionID:         "retry_source_connection_id",
	tpVersionInformation:              "version_information",
	tpResetStreamAt:                   "reset_stream_at",
	tpMaxDatagramFrameSize:            "max_datagram_frame_size",
}

// Defaults and limits from RFC 9000 section 18.2.
const (
	DefaultMaxUDPPayloadSize       = 65527
	DefaultAckDelayExponent        = 3
	DefaultMaxAckDelay             = 25 * time.Millisecond
	DefaultActiveConnectionIDLimit = 2

	minMaxUDPPayloadSize       = 1200
	maxAckDelayExponent        = 20
	maxMaxAckDelayMs           = 1<<14 - 1
	minActiveConnectionIDLimit = 2
)

// PreferredAddress is the server's preferred_address parameter (RFC 9000
// section 18.2). An unspecified address family is 0.0.0.0:0 or [::]:0.
type PreferredAddress struct {
	IPv4                netip.AddrPort
	IPv6                netip.AddrPort
	ConnectionID        []byte
	StatelessResetToken [16]byte
}

// VersionInformation is the version_information parameter (RFC 9368
// section 3).
type VersionInformation struct {
	ChosenVersion Version
	// AvailableVersions is the client's compatible versions or the
	// server's fully deployed ones.
	AvailableVersions []Version
}

// TransportParameters holds the QUIC transport parameters. Fields absent
// from the wire keep their RFC defaults (see DefaultTransportParameters).
// Connection IDs and the stateless reset token carry a Has flag because
// the RFC distinguishes an absent parameter from an empty one (for
// example retry_source_connection_id is only sent after a Retry).
type TransportParameters struct {
	OriginalDestinationConnectionID    []byte
	HasOriginalDestinationConnectionID bool

	// MaxIdleTimeout is 0 when the endpoint has no idle timeout. Values
	// too large for a time.Duration are clamped.
	MaxIdleTimeout time.Duration

	StatelessResetToken    [16]byte
	HasStatelessResetToken bool

	MaxUDPPayloadSize              uint64
	InitialMaxData                 uint64
	InitialMaxStreamDataBidiLocal  uint64
	InitialMaxStreamDataBidiRemote uint64
	InitialMaxStreamDataUni        uint64
	InitialMaxStreamsBidi          uint64
	InitialMaxStreamsUni           uint64
	AckDelayExponent               uint8
	// MaxAckDelay has millisecond granularity on the wire.
	MaxAckDelay             time.Duration
	DisableActiveMigration  bool
	PreferredAddress        *PreferredAddress
	ActiveConnectionIDLimit uint64

	InitialSourceConnectionID    []byte
	HasInitialSourceConnectionID bool
	RetrySourceConnectionID      []byte
	HasRetrySourceConnectionID   bool

	// MaxDatagramFrameSize is 0 when DATAGRAM frames are not supported
	// (RFC 9221 section 3).
	MaxDatagramFrameSize uint64
	VersionInformation   *VersionInformation
	// ResetStreamAt (reset_stream_at, an empty value): the endpoint
	// accepts RESET_STREAM_AT frames (draft-ietf-quic-reliable-stream-reset).
	ResetStreamAt bool
}

// DefaultTransportParameters returns the values an endpoint assumes for
// parameters its peer did not send.
func DefaultTransportParameters() TransportParameters {
	return TransportParameters{
		MaxUDPPayloadSize:       DefaultMaxUDPPayloadSize,
		AckDelayExponent:        DefaultAckDelayExponent,
		MaxAckDelay:             DefaultMaxAckDelay,
		ActiveConnectionIDLimit: DefaultActiveConnectionIDLimit,
	}
}

// isServerOnly reports whether only a server may send parameter id.
func isServerOnly(id uint64) bool {
	switch id {
	case tpOriginalDestinationConnectionID, tpStatelessResetToken, tpPreferredAddress, tpRetrySourceConnectionID:
		return true
	}
	return false
}
