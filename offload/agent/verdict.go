package agent

import "github.com/turboretry/turboretry/token"

// Verdict says what the datapath does with a datagram.
type Verdict uint8

// Verdicts. The zero value is Drop, so a forgotten verdict fails closed.
const (
	// Drop discards the datagram.
	Drop Verdict = iota
	// SendReply sends the returned reply to the datagram's source address
	// from the address it was received on, and discards the datagram.
	SendReply
	// Forward passes the datagram unchanged to the host.
	Forward
)

// String returns the verdict's metric label.
func (v Verdict) String() string {
	switch v {
	case Drop:
		return "drop"
	case SendReply:
		return "send_reply"
	case Forward:
		return "forward"
	}
	return "unknown"
}

// Reason says why the engine reached its verdict. Every reason belongs to
// exactly one verdict (Reason.Verdict), so counting by reason counts
// verdicts too.
type Reason uint8

// Reasons. The token rejection reasons follow ReasonTokenMalformed in the
// order of token.Reason, so ReasonOfToken can map them by offset.
const (
	ReasonNone Reason = iota // not a verdict; the zero value

	// SendReply reasons.
	ReasonRetry              // Initial without token: Retry sent
	ReasonRetryBadNewToken   // Initial with a bad new_token token: Retry sent
	ReasonVersionNegotiation // unsupported version: Version Negotiation sent
	ReasonPrefixRateRefused  // validated Initial over its prefix's rate: CONNECTION_REFUSED sent

	// Forward reasons.
	ReasonRetryTokenForwarded // valid retry token, RSCID = DCID: RSCID admitted
	ReasonNewTokenForwarded   // valid new_token token: DCID admitted
	ReasonRetryTokenKnownCID  // valid retry token, DCID already admitted (later Initials)
	ReasonNewTokenKnownCID    // valid new_token token, DCID already admitted (later Initials)

	// Drop reasons.
	ReasonPaused               // engine paused (fault injection)
	ReasonMalformed            // header does not parse
	ReasonCIDTooLong           // v1/v2 connection ID over 20 bytes
	ReasonInitialTooSmall      // Initial in a datagram under 1200 bytes
	ReasonDCIDTooShort         // first Initial with a DCID under 8 bytes
	ReasonUnsupportedTooSmall  // unknown version in a datagram under 1200 bytes
	ReasonVersionNegotiationIn // a Version Negotiation packet (version 0)
	ReasonUnknownConnection    // 0-RTT, Handshake or short header: fast path miss
	ReasonUnexpectedRetry      // a Retry packet sent to the server
	ReasonRSCIDMismatch        // valid retry token for another DCID
	ReasonInternal             // token issuance failed (e.g. no valid source address)
	ReasonPrefixRateDropped    // validated Initial over its prefix's rate, dropped

	ReasonTokenMalformed // first token rejection reason, = token.ReasonMalformed
)

// NumReasons is the number of Reason values, ReasonNone included; use it to
// size per-reason arrays.
const NumReasons = int(ReasonTokenMalformed) + int(token.NumReasons) - 1

// ReasonOfToken returns the drop reason for a token rejected with r, or
// ReasonNone for token.ReasonNone.
func ReasonOfToken(r token.Reason) Reason {
	if r == token.ReasonNone || int(r) >= int(token.NumReasons) {
		return ReasonNone
	}
	return ReasonTokenMalformed + Reason(r-token.ReasonMalformed)
}

// TokenReason returns the token rejection reason behind r, or
// token.ReasonNone if r is not a token rejection.
func (r Reason) TokenReason() token.Reason {
	if r < ReasonTokenMalformed || int(r) >= NumReasons {
		return token.ReasonNone
	}
	return token.ReasonMalformed + token.Reason(r-ReasonTokenMalformed)
}

// ReasonReplayedNewToken is the reason for a valid new_token token used
// before (token.ReasonReplayed): unlike the other token rejections it is
// answered with a Retry, as the client may be benign and can take one.
var ReasonReplayedNewToken = ReasonOfToken(token.ReasonReplayed)

// Verdict returns the verdict that goes with r.
func (r Reason) Verdict() Verdict {
	switch r {
	case ReasonRetry, ReasonRetryBadNewToken, ReasonVersionNegotiation, ReasonReplayedNewToken, ReasonPrefixRateRefused:
		return SendReply
	case ReasonRetryTokenForwarded, ReasonNewTokenForwarded, ReasonRetryTokenKnownCID, ReasonNewTokenKnownCID:
		return Forward
	}
	return Drop
}

var reasonLabels = [...]string{
	ReasonNone:                 "none",
	ReasonRetry:                "retry",
	ReasonRetryBadNewToken:     "retry_invalid_new_token",
	ReasonVersionNegotiation:   "version_negotiation",
	ReasonPrefixRateRefused:    "prefix_rate_refused",
	ReasonRetryTokenForwarded:  "retry_token",
	ReasonNewTokenForwarded:    "new_token",
	ReasonRetryTokenKnownCID:   "retry_token_known_cid",
	ReasonNewTokenKnownCID:     "new_token_known_cid",
	ReasonPaused:               "paused",
	ReasonMalformed:            "malformed",
	ReasonCIDTooLong:           "cid_too_long",
	ReasonInitialTooSmall:      "initial_too_small",
	ReasonDCIDTooShort:         "dcid_too_short",
	ReasonUnsupportedTooSmall:  "unsupported_version_too_small",
	ReasonVersionNegotiationIn: "version_negotiation_packet",
	ReasonUnknownConnection:    "unknown_connection",
	ReasonUnexpectedRetry:      "unexpected_retry",
	ReasonRSCIDMismatch:        "rscid_mismatch",
	ReasonInternal:             "internal_error",
	ReasonPrefixRateDropped:    "prefix_rate_dropped",
}

var tokenLabels = [token.NumReasons]string{
	token.ReasonMalformed:     "token_malformed",
	token.ReasonUnknownSource: "token_unknown_source",
	token.ReasonUnknownType:   "token_unknown_type",
	token.ReasonWrongType:     "token_wrong_type",
	token.ReasonUnknownKey:    "token_unknown_key",
	token.ReasonBadTIDMAC:     "token_bad_tid_mac",
	token.ReasonFromFuture:    "token_from_future",
	token.ReasonExpired:       "token_expired",
	token.ReasonBadTag:        "token_bad_tag",
	token.ReasonBadPayload:    "token_bad_payload",
	token.ReasonAddrMismatch:  "token_address_mismatch",
	token.ReasonPortMismatch:  "token_port_mismatch",
	token.ReasonReplayed:      "token_replayed",
}

// String returns the reason's metric label, lower case with underscores.
func (r Reason) String() string {
	if int(r) < len(reasonLabels) {
		return reasonLabels[r]
	}
	if tr := r.TokenReason(); tr != token.ReasonNone {
		return tokenLabels[tr]
	}
	return "unknown"
}
