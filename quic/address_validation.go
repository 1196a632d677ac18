package quic

import (
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/turboretry/turboretry/token"
)

// DefaultRetryThreshold is the threshold of unvalidated connections
// (InitialInfo.HandshakesInFlight) of the policy AddressValidationConfig
// uses when Policy is nil.
const DefaultRetryThreshold = 64

// DefaultUnvalidatedBudget is the memory budget for unvalidated
// connections (InitialInfo.UnvalidatedBytes) of AutoRetry: 8 MiB, about
// 100 connections of a one-datagram ClientHello (about 80 KiB each), so
// the count threshold normally fires first, while clients that make each
// unvalidated connection fat (multi-datagram ClientHellos, out-of-order
// CRYPTO data, packets kept for later keys: up to about 270 KiB each) are
// retried after about 30.
const DefaultUnvalidatedBudget = 8 << 20

// AddressValidationConfig turns on server-side address validation for a
// Transport (RFC 9000 section 8.1) with TurboRetry universal tokens
// (docs/design.md "Universal token"): Retries with host-issued tokens, acceptance
// of retry tokens that an offload agent issued (the host cooperator), and
// NEW_TOKEN tokens for later connections.
type AddressValidationConfig struct {
	// Policy decides what to do with every client Initial that would
	// create a connection. Nil means AutoRetry(DefaultRetryThreshold).
	Policy AddressPolicy
	// TokenSecret is the 32-byte root secret shared with offload agents
	// (token.ReadSecretFile reads a key file). Nil makes a random one, so
	// only this Transport's own tokens validate.
	TokenSecret []byte
	// TokenRotation is the key epoch length; 0 means 24 hours. It must
	// match the agents'.
	TokenRotation time.Duration
	// RetryTokenMaxAge and NewTokenMaxAge bound token age; 0 means 10 s and
	// 24 h.
	RetryTokenMaxAge time.Duration
	NewTokenMaxAge   time.Duration
	// DisableNewTokens stops the server from sending NEW_TOKEN frames.
	DisableNewTokens bool
	// NewTokenReplay makes NEW_TOKEN tokens single-use (RFC 9000 section
	// 8.1.4): a valid token used before is refused with reason "replayed"
	// and its client is sent a Retry; the same Initial (token and DCID)
	// again within seconds is a retransmission, not a replay. Nil means a
	// private filter sized for NewTokenMaxAge (token.ReplayFilterConfig
	// defaults: 2 MiB once in use); an integrated offload agent may share
	// one.
	NewTokenReplay *token.ReplayFilter
}

// AddressDecision is an AddressPolicy's verdict on a client Initial.
type AddressDecision uint8

const (
	// AddressAccept creates the connection. It counts as address-validated
	// only if the Initial carried a valid token.
	AddressAccept AddressDecision = iota
	// AddressRetry answers with a stateless Retry carrying a host retry
	// token. For an Initial that already carries a valid retry token the
	// stack accepts instead: a client follows one Retry only.
	AddressRetry
	// AddressDrop ignores the packet.
	AddressDrop
)

// String returns "accept", "retry" or "drop".
func (d AddressDecision) String() string {
	switch d {
	case AddressAccept:
		return "accept"
	case AddressRetry:
		return "retry"
	case AddressDrop:
		return "drop"
	}
	return "unknown"
}

// TokenKind says what kind of token a client Initial carried.
type TokenKind uint8

// Token kinds.
const (
	TokenNone     TokenKind = iota // no token
	TokenRetry                     // a retry token (from a Retry packet)
	TokenNewToken                  // a NEW_TOKEN token
	TokenUnknown                   // a token whose header we cannot read
)

// String returns the kind's lower-case name.
func (k TokenKind) String() string {
	return [...]string{"none", "retry", "new_token", "unknown"}[min(int(k), 3)]
}

// TokenInfo is the validation result of the token in a client Initial.
type TokenInfo struct {
	// Kind is the token's type as its header says; TokenNone when the
	// Initial carried no token.
	Kind TokenKind
	// Source is "host" or "agent" for a token whose header names one.
	Source string
	// Valid says the token passed every check: authentic, fresh, bound to
	// this client's address (and port, for retry), and for a retry token
	// its retry_source_connection_id equals the Initial's DCID.
	Valid bool
	// RejectReason says why an invalid token was rejected ("" if valid).
	RejectReason string
	// OriginalDestConnID and RetrySourceConnID are taken from a valid
	// retry token.
	OriginalDestConnID []byte
	RetrySourceConnID  []byte
	// IssuedAt is a valid token's issue time, to the millisecond. For a
	// retry token that is when the Retry was sent, so time.Since(IssuedAt)
	// in the policy is the Retry round trip.
	IssuedAt time.Time
}

// InitialInfo is what an AddressPolicy sees about a client Initial. It, its
// byte slices and the address RemoteAddr points to are only valid during
// the call: the listener reuses them for the next Initial. Keep
// RemoteAddrPort, a value, to remember the client.
type InitialInfo struct {
	// RemoteAddr is the client's address, a *net.UDPAddr unless the
	// Transport's socket is another PacketConn that gives other addresses.
	RemoteAddr net.Addr
	// RemoteAddrPort is the client's address and port, an IPv4-mapped
	// IPv6 address unmapped; the zero AddrPort when RemoteAddr is no IP
	// address.
	RemoteAddrPort netip.AddrPort
	// DestConnID and SrcConnID are the Initial's connection IDs.
	DestConnID []byte
	SrcConnID  []byte
	Version    Version
	Token      TokenInfo
	// HandshakesInFlight counts the listener's connections whose client
	// has not proven its address yet (server load): from the connection's
	// first Initial until a Handshake packet from the client decrypts, or
	// the connection ends. Connections accepted with a valid token never
	// count. It is the same for Listener and EarlyListener, whose
	// connections are handed out at 0.5-RTT, before that proof.
	HandshakesInFlight int
	// UnvalidatedBytes estimates the memory those connections hold: a
	// fixed cost each (48 KiB) plus their handshake buffers (32 KiB for
	// the server's first flight).
	UnvalidatedBytes int64
}

// AddressPolicy decides about a client Initial that would create a
// connection. It runs on the Transport's receive goroutine, so it must be
// fast and must not block.
//
// Whatever the policy says, the stack answers an invalid retry token with
// INVALID_TOKEN (unless the policy drops the packet), and ignores an
// invalid NEW_TOKEN token, as RFC 9000 section 8.1.3 asks.
type AddressPolicy func(*InitialInfo) AddressDecision

// AlwaysRetry validates every client's address: Initials without a valid
// token get a Retry.
func AlwaysRetry() AddressPolicy {
	return func(in *InitialInfo) AddressDecision {
		if in.Token.Valid {
			return AddressAccept
		}
		return AddressRetry
	}
}

// NeverRetry accepts every Initial; tokens still lift the
// anti-amplification limit when valid.
func NeverRetry() AddressPolicy {
	return func(*InitialInfo) AddressDecision { return AddressAccept }
}

// AutoRetry sends Retries only under load: when more than threshold
// connections are unvalidated (InitialInfo.HandshakesInFlight), or they
// hold more than DefaultUnvalidatedBudget bytes, Initials without a valid
// token get a Retry. It is also the fail-open fallback when an offload
// agent is down.
func AutoRetry(threshold int) AddressPolicy {
	return AutoRetryBudget(threshold, DefaultUnvalidatedBudget)
}

// AutoRetryBudget is AutoRetry with the memory budget for unvalidated
// connections given: Initials without a valid token get a Retry while more
// than threshold connections are unvalidated or they hold more than
// maxBytes (InitialInfo.UnvalidatedBytes).
func AutoRetryBudget(threshold int, maxBytes int64) AddressPolicy {
	return func(in *InitialInfo) AddressDecision {
		if in.Token.Valid || (in.HandshakesInFlight <= threshold && in.UnvalidatedBytes <= maxBytes) {
			return AddressAccept
		}
		return AddressRetry
	}
}

// VerifySourceAddress gives quic-go's Transport.VerifySourceAddress
// semantics: Initials without a valid token from addresses for which
// verify returns true get a Retry.
func VerifySourceAddress(verify func(net.Addr) bool) AddressPolicy {
	return func(in *InitialInfo) AddressDecision {
		// A copy: quic-go's callback may keep its argument.
		if in.Token.Valid || !verify(cloneAddr(in.RemoteAddr)) {
			return AddressAccept
		}
		return AddressRetry
	}
}

// cloneAddr returns a copy of a *net.UDPAddr, or a itself.
func cloneAddr(a net.Addr) net.Addr {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return a
	}
	c := *ua
	c.IP = slices.Clone(ua.IP)
	return &c
}
