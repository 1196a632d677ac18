package quic

import (
	"sync"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
)

// transportTracer records the Transport's own events (those of no single
// connection) into Transport.Tracer, until Close.
type transportTracer struct {
	mu     sync.Mutex
	r      qlogwriter.Recorder
	closed bool
}

func (tt *transportTracer) record(ev qlogwriter.Event) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.r != nil && !tt.closed {
		tt.r.RecordEvent(ev)
	}
}

func (tt *transportTracer) close() {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.r != nil && !tt.closed {
		tt.closed = true
		_ = tt.r.Close()
	}
}

// dropTriggers maps our drop reasons to qlog's.
var dropTriggers = [...]qlog.PacketDropReason{
	DropRecvQueueFull:      qlog.PacketDropDOSPrevention,
	DropPanic:              qlog.PacketDropProtocolViolation,
	DropMalformed:          qlog.PacketDropHeaderParseError,
	DropUnknownConnection:  qlog.PacketDropUnknownConnectionID,
	DropInitialTooSmall:    qlog.PacketDropUnexpectedPacket,
	DropNonQUIC:            qlog.PacketDropUnexpectedPacket,
	DropUnsupportedVersion: qlog.PacketDropUnsupportedVersion,
}

// traceDropped records a datagram of size bytes dropped for r.
func (t *Transport) traceDropped(r DropReason, size int) {
	if t.Tracer == nil {
		return
	}
	trigger := qlog.PacketDropReason("")
	if int(r) < len(dropTriggers) {
		trigger = dropTriggers[r]
	}
	t.tracer.record(qlog.PacketDropped{Raw: qlog.RawInfo{Length: size, PayloadLength: qlog.OmitLength}, Trigger: trigger})
}

// traceVersionNegotiation records a Version Negotiation packet we sent.
func (t *Transport) traceVersionNegotiation(dcid, scid []byte, vs []wire.Version) {
	if t.Tracer == nil {
		return
	}
	ev := qlog.VersionNegotiationSent{Header: qlog.PacketHeaderVersionNegotiation{
		SrcConnectionID:  qlog.ArbitraryLenConnectionID(append([]byte(nil), scid...)),
		DestConnectionID: qlog.ArbitraryLenConnectionID(append([]byte(nil), dcid...)),
	}}
	for _, v := range vs {
		ev.SupportedVersions = append(ev.SupportedVersions, Version(v))
	}
	t.tracer.record(ev)
}
