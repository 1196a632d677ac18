package http3

import "sync/atomic"

// Refusal is the reason a Server refused or dropped a request, a stream
// or a connection; it is the "reason" label of ServerStats.Refused.
type Refusal int

// The reasons counted in ServerStats.Refused.
const (
	// RefusedHeaderTooLarge: a request header section over
	// MaxHeaderBytes, answered with 431.
	RefusedHeaderTooLarge Refusal = iota
	// RefusedHeaderTimeout: no complete request header section within
	// ReadHeaderTimeout; the stream is reset with H3_REQUEST_INCOMPLETE.
	RefusedHeaderTimeout
	// RefusedHeaderBudget: the connection's header budget
	// (MaxConnHeaderBytes) stayed full for ReadHeaderTimeout; the stream
	// is reset with H3_REQUEST_REJECTED, so the client may retry it.
	RefusedHeaderBudget
	// RefusedGoingAway: a request stream at or above our GOAWAY's ID,
	// reset with H3_REQUEST_REJECTED.
	RefusedGoingAway
	// RefusedStreamError: a request stream reset for a malformed message
	// or another stream error (H3_MESSAGE_ERROR, ...).
	RefusedStreamError
	// RefusedConnectionError: a connection closed for a protocol
	// violation (frame, SETTINGS, QPACK or critical-stream errors).
	RefusedConnectionError
	// RefusedUniStreamTimeout: a unidirectional stream whose type did not
	// arrive within UniStreamTimeout, stopped with
	// H3_STREAM_CREATION_ERROR.
	RefusedUniStreamTimeout
	// RefusedUniStreamIgnored: a unidirectional stream of a type we do
	// not handle, stopped with H3_STREAM_CREATION_ERROR (RFC 9114 6.2).
	RefusedUniStreamIgnored
	// RefusedSettingsTimeout: a control stream whose SETTINGS frame did
	// not arrive within UniStreamTimeout; the connection is closed with
	// H3_MISSING_SETTINGS.
	RefusedSettingsTimeout
	// RefusedWriteStall: a response whose writes made no progress for
	// WriteStallTimeout; the stream is reset with H3_REQUEST_CANCELLED.
	RefusedWriteStall
	// RefusedServerClosing: a connection accepted after Close, closed
	// with H3_NO_ERROR (one accepted during Shutdown goes away instead).
	RefusedServerClosing

	// NumRefusals is the number of reasons.
	NumRefusals
)

var refusalLabels = [NumRefusals]string{
	"header_too_large", "header_timeout", "header_budget", "going_away", "stream_error",
	"connection_error", "uni_stream_timeout", "uni_stream_ignored", "settings_timeout",
	"write_stall", "server_closing",
}

// String returns the reason's label, in snake case.
func (r Refusal) String() string {
	if r < 0 || r >= NumRefusals {
		return "unknown"
	}
	return refusalLabels[r]
}

// ServerStats is a snapshot of a Server's counters (Server.Stats).
type ServerStats struct {
	// ConnsAccepted counts the QUIC connections served; ConnsActive is
	// how many are open now.
	ConnsAccepted uint64
	ConnsActive   int64
	// Requests counts request streams accepted; RequestsActive is how
	// many are being handled now.
	Requests       uint64
	RequestsActive int64
	// HeaderBytesReserved is the header budget reserved now by header
	// sections being read, summed over all connections.
	HeaderBytesReserved int64
	// HandlerPanics counts handler panics recovered (other than
	// http.ErrAbortHandler); each reset its stream with
	// H3_INTERNAL_ERROR and was logged at ERROR with its stack.
	HandlerPanics uint64
	// Refused counts refusals and drops by reason, indexed by Refusal.
	Refused [NumRefusals]uint64
}

// serverCounters are the live counters behind ServerStats.
type serverCounters struct {
	connsAccepted  atomic.Uint64
	connsActive    atomic.Int64
	requests       atomic.Uint64
	requestsActive atomic.Int64
	headerBytes    atomic.Int64
	handlerPanics  atomic.Uint64
	refused        [NumRefusals]atomic.Uint64
}

func (c *serverCounters) refuse(r Refusal) { c.refused[r].Add(1) }

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() ServerStats {
	c := &s.stats
	st := ServerStats{
		ConnsAccepted:       c.connsAccepted.Load(),
		ConnsActive:         c.connsActive.Load(),
		Requests:            c.requests.Load(),
		RequestsActive:      c.requestsActive.Load(),
		HeaderBytesReserved: c.headerBytes.Load(),
		HandlerPanics:       c.handlerPanics.Load(),
	}
	for i := range st.Refused {
		st.Refused[i] = c.refused[i].Load()
	}
	return st
}
