// Package recovery implements QUIC loss detection (RFC 9002 sections 5, 6
// and appendix A): the RTT estimator, per-space sent packet tracking, ACK
// processing, packet and time threshold loss detection, the probe timeout,
// persistent congestion, and the calls that drive a congestion controller
// (internal/congestion).
//
// It never reads the clock: every call takes now, so tests are exact.
package recovery

// Space is a packet number space (RFC 9000 section 12.3).
type Space uint8

// The three packet number spaces, in the order the PTO examines them.
const (
	Initial Space = iota
	Handshake
	ApplicationData
	numSpaces
)

// String returns the space's name.
func (s Space) String() string {
	switch s {
	case Initial:
		return "Initial"
	case Handshake:
		return "Handshake"
	case ApplicationData:
		return "ApplicationData"
	default:
		return "Space(invalid)"
	}
}

func (s Space) valid() bool { return s < numSpaces }
