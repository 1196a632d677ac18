package quic

import (
	"log/slog"
	"runtime/debug"
	"sync/atomic"
)

// RefusalReason says why a client's connection attempt was refused or
// dropped before any connection state existed, or why an accepted one was
// closed before the application got it.
type RefusalReason uint8

// Refusal reasons; String gives the label TransportStats uses.
const (
	// RefusedConnectionCap: the listener already has Config.MaxConnections
	// connections. Answered with a stateless CONNECTION_REFUSED.
	RefusedConnectionCap RefusalReason = iota
	// RefusedHandshakeSlots: Config.MaxHandshakes handshakes are in
	// progress. Answered with a stateless CONNECTION_REFUSED.
	RefusedHandshakeSlots
	// RefusedBacklogFull: Config.AcceptBacklog connections wait for
	// Accept. Answered with a stateless CONNECTION_REFUSED.
	RefusedBacklogFull
	// RefusedAcceptQueueFull: a connection finished its handshake but the
	// accept queue had no room (only possible with MaxHandshakes
	// unlimited); closed with CONNECTION_REFUSED.
	RefusedAcceptQueueFull
	// RefusedServerClosed: the listener closed before Accept took it.
	RefusedServerClosed
	// RefusedUndecryptable: an Initial that would create a connection, or
	// be answered with INVALID_TOKEN, did not decrypt (garbage behind a
	// valid-looking header, or a header corrupted on the way). Dropped.
	RefusedUndecryptable
	// RefusedCIDInUse: the Initial's DCID is routed to another connection
	// already. Dropped.
	RefusedCIDInUse
	// RefusedStartFailed: the connection could not start (TLS refused the
	// configuration). Dropped.
	RefusedStartFailed
	// RefusedByApplication: Transport.ConnContext or
	// Config.GetConfigForClient returned an error. Answered with a
	// stateless CONNECTION_REFUSED.
	RefusedByApplication
	// RefusedPrefixHandshakes: the client's source prefix holds its fair
	// share of MaxHandshakes while the listener is under pressure
	// (Config.Admission). Answered with a stateless CONNECTION_REFUSED.
	RefusedPrefixHandshakes
	// RefusedPrefixConnections: the client's source prefix holds its
	// fair share of MaxConnections while the listener is under pressure
	// (Config.Admission). Answered with a stateless CONNECTION_REFUSED.
	RefusedPrefixConnections
	// RefusedPrefixRate: the client's source prefix opened new
	// connections faster than AdmissionConfig.NewConnectionRate. Answered
	// with a stateless CONNECTION_REFUSED.
	RefusedPrefixRate

	numRefusalReasons
)

var refusalLabels = [numRefusalReasons]string{
	"connection_cap", "handshake_slots_full", "accept_backlog_full", "accept_queue_full",
	"server_closed", "undecryptable_initial", "cid_in_use", "start_failed", "application",
	"prefix_handshakes", "prefix_connections", "prefix_rate",
}

// String returns the reason's label, as in TransportStats.Refused.
func (r RefusalReason) String() string {
	if r < numRefusalReasons {
		return refusalLabels[r]
	}
	return "unknown"
}

// DropReason says why a received datagram was dropped.
type DropReason uint8

// Drop reasons; String gives the label TransportStats uses.
const (
	// DropRecvQueueFull: the connection's receive queue held
	// maxRecvQueue datagrams its goroutine had not processed yet.
	DropRecvQueueFull DropReason = iota
	// DropPanic: processing the datagram panicked (a bug; see
	// TransportStats.PanicsRecovered and the ERROR log).
	DropPanic
	// DropMalformed: the header does not parse.
	DropMalformed
	// DropUnknownConnection: a short-header packet, or a long-header one
	// other than an Initial, for no connection of ours (answered with a
	// stateless reset when Transport.StatelessResetKey is set).
	DropUnknownConnection
	// DropInitialTooSmall: an Initial that would create a connection in a
	// datagram under 1200 bytes, or with a DCID under 8 bytes and no token
	// (RFC 9000 sections 14.1 and 7.2).
	DropInitialTooSmall
	// DropNonQUIC: a datagram that is not QUIC (first two bits 0) that no
	// ReadNonQUICPacket takes (not called yet, or 32 waiting).
	DropNonQUIC
	// DropUnsupportedVersion: a long header of a version the listener
	// does not speak that gets no Version Negotiation: a Version
	// Negotiation packet (version 0, never answered) or a datagram under
	// 1200 bytes (RFC 9000 section 6.1).
	DropUnsupportedVersion

	numDropReasons
)

var dropLabels = [numDropReasons]string{"recv_queue_full", "panic", "malformed", "unknown_connection", "initial_too_small", "non_quic", "unsupported_version"}

// String returns the reason's label, as in TransportStats.DatagramsDropped.
func (r DropReason) String() string {
	if r < numDropReasons {
		return dropLabels[r]
	}
	return "unknown"
}

// transportCounters are a Transport's event counters, read by Stats.
type transportCounters struct {
	refused         [numRefusalReasons]atomic.Uint64
	dropped         [numDropReasons]atomic.Uint64
	panics          atomic.Uint64
	sendBudgetWaits atomic.Uint64
	closedByLimit   [numClosedByLimitReasons]atomic.Uint64
}

// TransportStats is a snapshot of a Transport's load, limits and the
// events that shed load. Counters only grow; the other fields are the
// values at the time of the call. It is plain data: export it as metrics
// as you like (the file server's /metrics does).
type TransportStats struct {
	// Connections is the listener's server connections now (established
	// or in the handshake; one that is closing or draining gives its slot
	// back), bounded by Config.MaxConnections.
	Connections int
	// Handshaking is the listener's connections whose handshake has not
	// completed, bounded by Config.MaxHandshakes.
	Handshaking int
	// Unvalidated is the listener's connections whose client address is
	// not validated yet (no Handshake packet from it decrypted, no valid
	// token): what AddressPolicy sees as InitialInfo.HandshakesInFlight.
	Unvalidated int
	// UnvalidatedBytes estimates the memory those connections hold
	// (InitialInfo.UnvalidatedBytes).
	UnvalidatedBytes int64
	// AcceptQueue is the connections ready and waiting for Accept.
	AcceptQueue int
	// SendBuffered is the stream data written by the application and not
	// yet acknowledged, over all the Transport's connections, bounded by
	// Transport.MaxSendBuffer; SendBufferedPeak is its highest value so
	// far.
	SendBuffered     int64
	SendBufferedPeak int64
	// ReceiveBuffered is the memory, in bytes, that stream receive buffers
	// hold for data received and not yet read by the application, over
	// all the Transport's connections. Past Transport.MaxReceiveBuffer
	// receive windows stop growing; past Transport.MaxReceiveMemory
	// connections are closed (ClosedByLimit). ReceiveOutOfOrder is the
	// part of it holding data beyond a gap, which the application cannot
	// read yet.
	ReceiveBuffered   int64
	ReceiveOutOfOrder int64
	// SendBudgetWaits counts stream writes that had to wait for the
	// connection's or the Transport's send budget (not for the peer's flow
	// control).
	SendBudgetWaits uint64
	// Refused counts connection attempts refused or dropped, by
	// RefusalReason label; zero counts are left out.
	Refused map[string]uint64
	// DatagramsDropped counts received datagrams dropped, by DropReason
	// label; zero counts are left out.
	DatagramsDropped map[string]uint64
	// ClosedByLimit counts connections closed because of the memory
	// their peer made us hold, by ClosedByLimitReason label; zero counts
	// are left out.
	ClosedByLimit map[string]uint64
	// PanicsRecovered counts panics caught in a connection's goroutine or
	// the receive loop (each is a bug, logged at ERROR with its stack).
	PanicsRecovered uint64
	// Prefixes is the client source prefixes the listener's admission
	// tracks (Config.Admission), bounded by AdmissionConfig.MaxPrefixes;
	// PrefixTableBytes estimates the memory they hold.
	Prefixes         int
	PrefixTableBytes int64
	// TopRefusedPrefixes is Transport.TopRefusedPrefixes: the prefixes
	// refused most, most first (at most 8).
	TopRefusedPrefixes []PrefixRefusals
}

// Stats returns a snapshot of the Transport's load and shed-load counters.
func (t *Transport) Stats() TransportStats {
	st := TransportStats{
		SendBuffered:      t.sendBudget.used.Load(),
		SendBufferedPeak:  t.sendBudget.peak.Load(),
		ReceiveBuffered:   t.recvBuffered.Load(),
		ReceiveOutOfOrder: t.recvOutOfOrder.Load(),
		SendBudgetWaits:   t.counters.sendBudgetWaits.Load(),
		Refused:           map[string]uint64{},
		DatagramsDropped:  map[string]uint64{},
		ClosedByLimit:     map[string]uint64{},
		PanicsRecovered:   t.counters.panics.Load(),
	}
	for r := range t.counters.closedByLimit {
		if v := t.counters.closedByLimit[r].Load(); v > 0 {
			st.ClosedByLimit[ClosedByLimitReason(r).String()] = v
		}
	}
	for r := range t.counters.refused {
		if v := t.counters.refused[r].Load(); v > 0 {
			st.Refused[RefusalReason(r).String()] = v
		}
	}
	for r := range t.counters.dropped {
		if v := t.counters.dropped[r].Load(); v > 0 {
			st.DatagramsDropped[DropReason(r).String()] = v
		}
	}
	t.mu.Lock()
	s := t.server
	t.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		st.Connections = s.load.conns
		st.Handshaking = s.load.handshaking
		st.Unvalidated = s.load.unvalidated
		st.UnvalidatedBytes = s.load.unvalidatedBytes
		if a := s.prefixes; a != nil {
			st.Prefixes, st.PrefixTableBytes = len(a.entries), a.tableBytes()
			st.TopRefusedPrefixes = append([]PrefixRefusals(nil), a.top[:a.topLen]...)
		}
		s.mu.Unlock()
		st.AcceptQueue = len(s.acceptCh)
	}
	return st
}

func (t *Transport) countRefused(r RefusalReason) { t.counters.refused[r].Add(1) }

// countDropped counts a received datagram of size bytes dropped for r.
func (t *Transport) countDropped(r DropReason, size int) {
	t.counters.dropped[r].Add(1)
	if t.Tracer != nil {
		t.traceDropped(r, size)
	}
}

// recoveredPanic logs a recovered panic at ERROR with its stack and counts
// it: each one is a bug in this package, never silent.
func (t *Transport) recoveredPanic(where string, r any) {
	t.counters.panics.Add(1)
	slog.Error("quic: recovered panic", "where", where, "panic", r, "stack", string(debug.Stack()))
}
