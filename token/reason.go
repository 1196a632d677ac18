package token

import (
	"errors"
	"strconv"
)

// Reason says why a token was rejected. Validators stop at the first failed
// check, so a token has exactly one reason.
type Reason uint8

// Rejection reasons, in the order the checks run. ReasonNone means valid.
const (
	ReasonNone          Reason = iota
	ReasonMalformed            // length outside [MinTokenLen, MaxTokenLen]
	ReasonUnknownSource        // source bits not host or agent
	ReasonUnknownType          // type bits not retry or new_token
	ReasonWrongType            // valid type, but not the one the caller expects
	ReasonUnknownKey           // key id matches none of epochs e-1, e, e+1
	ReasonBadTIDMAC            // TM does not authenticate TR: forged TID
	ReasonFromFuture           // T later than now plus the allowed skew
	ReasonExpired              // older than the maximum age for its type
	ReasonBadTag               // AES-GCM authentication failed
	ReasonBadPayload           // decrypted payload does not parse
	ReasonAddrMismatch         // client IP differs from the packet's
	ReasonPortMismatch         // retry token: client port differs
	// ReasonReplayed: a new_token token used before (not a retransmission
	// of its first Initial). A ReplayFilter finds it, after the Validator
	// accepted the token.
	ReasonReplayed

	// NumReasons is the number of Reason values, ReasonNone included; use
	// it to size per-reason counters.
	NumReasons = iota
)

var reasonNames = [NumReasons]string{
	ReasonNone:          "",
	ReasonMalformed:     "malformed",
	ReasonUnknownSource: "unknown source",
	ReasonUnknownType:   "unknown type",
	ReasonWrongType:     "wrong type",
	ReasonUnknownKey:    "unknown key",
	ReasonBadTIDMAC:     "bad TID MAC",
	ReasonFromFuture:    "from the future",
	ReasonExpired:       "expired",
	ReasonBadTag:        "bad tag",
	ReasonBadPayload:    "bad payload",
	ReasonAddrMismatch:  "address mismatch",
	ReasonPortMismatch:  "port mismatch",
	ReasonReplayed:      "replayed",
}

// String returns a short lower-case description; ReasonNone is "".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Error is the error a Validator returns for a rejected token. The values
// are preallocated, one per reason, so rejecting never allocates; compare
// with errors.Is against ErrMalformed and friends, or use ReasonOf.
type Error struct {
	Reason Reason
}

func (e *Error) Error() string { return "token rejected: " + e.Reason.String() }

var rejectErrs = func() (errs [NumReasons]*Error) {
	for i := range errs {
		errs[i] = &Error{Reason: Reason(i)}
	}
	return
}()

// The rejection errors, one per reason.
var (
	ErrMalformed     = rejectErrs[ReasonMalformed]
	ErrUnknownSource = rejectErrs[ReasonUnknownSource]
	ErrUnknownType   = rejectErrs[ReasonUnknownType]
	ErrWrongType     = rejectErrs[ReasonWrongType]
	ErrUnknownKey    = rejectErrs[ReasonUnknownKey]
	ErrBadTIDMAC     = rejectErrs[ReasonBadTIDMAC]
	ErrFromFuture    = rejectErrs[ReasonFromFuture]
	ErrExpired       = rejectErrs[ReasonExpired]
	ErrBadTag        = rejectErrs[ReasonBadTag]
	ErrBadPayload    = rejectErrs[ReasonBadPayload]
	ErrAddrMismatch  = rejectErrs[ReasonAddrMismatch]
	ErrPortMismatch  = rejectErrs[ReasonPortMismatch]
)

// ReasonOf returns the rejection reason carried by err, ReasonNone for nil
// or for an error that is not a token rejection.
func ReasonOf(err error) Reason {
	if e, ok := err.(*Error); ok {
		return e.Reason
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonNone
}
