package quic

import (
	"sync"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
)

// transportTracer records the Transport's own events (those of no single
// connection) into Transport.Tracer, until Close. The Recorder is called
// without mu held (it is the application's code); mu only counts the calls
// under way, so that Close, which a Recorder must not see concurrently with
// RecordEvent, waits for them.
type transportTracer struct {
	mu     sync.Mutex
	r      qlogwriter.Recorder
	closed bool
	active int        // RecordEvent calls under way
	idle   *sync.Cond // signaled when active drops to 0 after closed
}

func (tt *transportTracer) record(ev qlogwriter.Event) {
	tt.mu.Lock()
	if tt.r == nil || tt.closed {
		tt.mu.Unlock()
		return
	}
	tt.active++
	tt.mu.Unlock()
	tt.r.RecordEvent(ev)
	tt.mu.Lock()
	tt.active--
	if tt.active == 0 && tt.closed {
		tt.cond().Broadcast()
	}
	tt.mu.Unlock()
}

func (tt *transportTracer) close() {
	tt.mu.Lock()
	if tt.r == nil || tt.closed {
		tt.mu.Unlock()
		return
	}
	tt.closed = true
	for tt.active > 0 {
		tt.cond().Wait()
	}
	tt.mu.Unlock()
	_ = tt.r.Close()
}

// cond returns the condition variable close waits on (mu held).
func (tt *transportTracer) cond() *sync.Cond {
	if tt.idle == nil {
		tt.idle = sync.NewCond(&tt.mu)
	}
	return tt.idle
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
	ev.SupportedVersions = append(ev.SupportedVersions, vs...)
	t.tracer.record(ev)
}
