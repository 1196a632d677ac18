package quic

import (
	"crypto/tls"

	"github.com/turboretry/turboretry/quic/quictype"
)

// StreamID is a QUIC stream ID (RFC 9000 section 2.1).
type StreamID = quictype.StreamID

// Version is a QUIC version number.
type Version = quictype.Version

// The QUIC versions this package speaks.
const (
	Version1 = quictype.Version1
	Version2 = quictype.Version2
)

// SupportedVersions returns the versions this package speaks, preferred first.
func SupportedVersions() []Version { return []Version{Version1, Version2} }

// StatelessResetKey derives stateless reset tokens for our connection IDs.
type StatelessResetKey [32]byte

// ConnectionState records basic details about a QUIC connection.
type ConnectionState struct {
	// TLS is the state of the TLS 1.3 handshake.
	TLS tls.ConnectionState
	// SupportsDatagrams tells whether DATAGRAM frames (RFC 9221) were
	// enabled locally (Config.EnableDatagrams) and advertised by the peer.
	SupportsDatagrams struct {
		Remote, Local bool
	}
	// SupportsStreamResetPartialDelivery tells whether RESET_STREAM_AT
	// (draft-ietf-quic-reliable-stream-reset) was enabled locally
	// (Config.EnableStreamResetPartialDelivery) and advertised by the peer.
	SupportsStreamResetPartialDelivery struct {
		Remote, Local bool
	}
	// Used0RTT reports that 0-RTT data was accepted: on a server, that it
	// accepted the client's early data; on a client, once the handshake
	// completed, that the server did not reject it.
	Used0RTT bool
	// Version is the QUIC version in use.
	Version Version
	// GSO tells whether the socket sends with UDP generic segmentation
	// offload.
	GSO bool
	// RequireStreamCreditRelease says Config.RequireStreamCreditRelease
	// was set.
	RequireStreamCreditRelease bool
	// ValidatedBy says, on a server connection, which token proved the
	// client's address before the handshake: TokenRetry (a Retry token,
	// the server's own or an offload agent's), TokenNewToken (a NEW_TOKEN
	// token from an earlier connection), or TokenNone (no token: the
	// amplification limit applied until the handshake validated it).
	ValidatedBy TokenKind
}
