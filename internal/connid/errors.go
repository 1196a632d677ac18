package connid

import (
	"errors"

	"github.com/turboretry/turboretry/internal/qerr"
)

// Frame types of the errors below (RFC 9000 sections 19.15 and 19.16).
const (
	frameNewConnectionID    = 0x18
	frameRetireConnectionID = 0x19
)

// Protocol errors, created once so error paths do not allocate when a peer
// misbehaves repeatedly.
var (
	errNCIDZeroLength = qerr.NewProtocolViolation(frameNewConnectionID,
		"NEW_CONNECTION_ID received while using zero-length connection IDs")
	errNCIDBadLength = qerr.NewFrameEncodingError(frameNewConnectionID,
		"NEW_CONNECTION_ID connection ID length not 1..20")
	errNCIDRetirePriorTo = qerr.NewFrameEncodingError(frameNewConnectionID,
		"NEW_CONNECTION_ID retire_prior_to greater than sequence number")
	errNCIDSeqReused = qerr.NewProtocolViolation(frameNewConnectionID,
		"NEW_CONNECTION_ID sequence number reused with a different connection ID or token")
	errNCIDCIDReused = qerr.NewProtocolViolation(frameNewConnectionID,
		"NEW_CONNECTION_ID connection ID reused with a different sequence number")
	errNCIDTooMany = qerr.NewTransportError(qerr.ConnectionIDLimitError, frameNewConnectionID,
		"more active connection IDs than active_connection_id_limit")
	errNCIDTooManyRetire = qerr.NewTransportError(qerr.ConnectionIDLimitError, frameNewConnectionID,
		"too many connection IDs waiting for retirement")

	errRetireZeroLength = qerr.NewProtocolViolation(frameRetireConnectionID,
		"RETIRE_CONNECTION_ID received while using zero-length connection IDs")
	errRetireNotIssued = qerr.NewProtocolViolation(frameRetireConnectionID,
		"RETIRE_CONNECTION_ID for a sequence number never issued")
	errRetireOwnDCID = qerr.NewProtocolViolation(frameRetireConnectionID,
		"RETIRE_CONNECTION_ID retires the connection ID of its own packet")
)

// Usage errors: the caller, not the peer, did something out of order.
var (
	// ErrHandshakeDone is returned by RemoteCIDs.SetHandshakeCID once a
	// NEW_CONNECTION_ID frame has been processed.
	ErrHandshakeDone = errors.New("connid: handshake connection ID can no longer change")
	// ErrNoGenerator is returned by NewLocalCIDs without a Generator.
	ErrNoGenerator = errors.New("connid: LocalConfig.Generator is nil")
	// ErrRouteCollision is returned when AddRoute rejected several fresh
	// random IDs in a row, which means the routing table is broken.
	ErrRouteCollision = errors.New("connid: could not find an unused connection ID")
	// ErrPreferredAddress is returned by LocalCIDs.IssuePreferredAddressCID
	// after sequence 1 has been issued or with zero-length IDs.
	ErrPreferredAddress = errors.New("connid: preferred address connection ID must be sequence 1")
	// ErrBadLimit is returned by NewRemoteCIDs for a limit above
	// MaxRemoteLimit.
	ErrBadLimit = errors.New("connid: active_connection_id_limit above MaxRemoteLimit")
)

// ErrNoSpareID is returned by RemoteCIDs.SwitchTo when the sequence is not
// an active ID other than the current one, or when too many retirements
// are pending to retire the current one.
var ErrNoSpareID = errors.New("connid: no spare peer connection ID to switch to")
