// Package recovery implements QUIC loss detection (RFC 9002 sections 5, 6
// and appendix A): the RTT estimator, per-space sent packet tracking, ACK
// processing, packet and time threshold loss detection, the probe timeout,
// persistent congestion, and the calls that drive a congestion controller
// (internal/congestion).
//
// It never reads the clock: every call takes now, so tests are exact.
package recovery
