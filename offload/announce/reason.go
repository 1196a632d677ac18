package announce

import "strconv"

// Reason says why the Listener rejected a message. The checks run in the
// order of the constants and stop at the first failure.
type Reason uint8

// Rejection reasons. ReasonNone means the message was accepted.
const (
	ReasonNone      Reason = iota
	ReasonShort            // shorter than a header and a MAC
	ReasonMagic            // does not start with "TRCA"
	ReasonVersion          // a version other than 1
	ReasonMalformed        // cidLen or count out of range, or the length does not match them
	ReasonCIDLen           // well formed, but for a different connection ID length
	ReasonMAC              // the MAC does not verify with the key (or the previous key)
	ReasonTooOld           // timestamp more than MaxAge in the past (a replay, or clock skew)
	ReasonFuture           // timestamp more than MaxAge in the future

	// NumReasons is the number of Reason values, ReasonNone included; use
	// it to size per-reason counters.
	NumReasons = iota
)

var reasonNames = [NumReasons]string{
	ReasonNone:      "",
	ReasonShort:     "short",
	ReasonMagic:     "bad_magic",
	ReasonVersion:   "bad_version",
	ReasonMalformed: "malformed",
	ReasonCIDLen:    "cid_len",
	ReasonMAC:       "bad_mac",
	ReasonTooOld:    "too_old",
	ReasonFuture:    "future",
}

// String returns a short name usable as a metric label; ReasonNone is "".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}
