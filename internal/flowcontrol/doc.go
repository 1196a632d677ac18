// Package flowcontrol implements QUIC flow control and stream count limits
// (RFC 9000 section 4): receive windows with auto-tuning, send credit, and
// the MAX_STREAMS machinery, plus stream ID helpers (section 2.1).
//
// Violations by the peer come back as *Error values carrying the transport
// error code the connection must close with. Nothing here reads a clock:
// callers pass the current time and the smoothed RTT, which keeps tests
// deterministic.
//
// None of the types are safe for concurrent use. A connection drives them
// under its own lock, including the send credit that stream writers consult.
package flowcontrol
