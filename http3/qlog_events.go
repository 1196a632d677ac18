package http3

import (
	"context"
	"slices"
	"sync"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic"
)

// qlogProducer records HTTP/3 events (draft-ietf-quic-qlog-h3-events, the
// types of package http3/qlog) into the qlog trace of a QUIC connection
// (quic.Conn.QlogTrace) as one of its producers. A nil *qlogProducer
// records nothing: a connection without a trace pays a nil check per
// event and builds no event.
//
// The connection holds the producer until it ends, and hold adds holders
// (a server's requests in progress): the recorder is closed when the last
// holder is gone, so a handler that runs on after its connection closed
// still records what it writes, and nothing is recorded into a closed
// recorder.
type qlogProducer struct {
	mu        sync.Mutex
	r         qlogwriter.Recorder // nil once closed
	holds     int
	connEnded bool          // the connection's hold was released (endConn)
	done      chan struct{} // closed once the recorder is
}

// newQlogProducer adds a producer to qc's trace; nil when qc has none or
// it ended.
func newQlogProducer(qc *quic.Conn) *qlogProducer {
	t := qc.QlogTrace()
	if t == nil {
		return nil
	}
	r := t.AddProducer()
	if r == nil {
		return nil
	}
	p := &qlogProducer{r: r, holds: 1, done: make(chan struct{})}
	context.AfterFunc(qc.Context(), p.endConn)
	return p
}

// endConn releases the connection's hold, once: when its context is done,
// or earlier where we close the connection ourselves and the application
// may exit as soon as the close returns (ClientConn.closeByTransport),
// which the AfterFunc's goroutine would race.
func (p *qlogProducer) endConn() {
	if p == nil {
		return
	}
	p.mu.Lock()
	ended := p.connEnded
	p.connEnded = true
	p.mu.Unlock()
	if !ended {
		p.release()
	}
}

// endConnAndWait is endConn, then waits for the recorder to be closed:
// an event being recorded on another goroutine meanwhile (a client's only
// other holder) closes it when it is done.
func (p *qlogProducer) endConnAndWait() {
	if p == nil {
		return
	}
	p.endConn()
	<-p.done
}

// hold keeps the recorder open until the matching release.
func (p *qlogProducer) hold() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.r != nil {
		p.holds++
	}
	p.mu.Unlock()
}

// release ends a hold (or the connection's); the last one closes the
// recorder. A release after the close does nothing, which also covers the
// holds taken when it was closed already.
func (p *qlogProducer) release() {
	if p == nil {
		return
	}
	p.mu.Lock()
	r := p.r
	if r != nil {
		if p.holds--; p.holds > 0 {
			r = nil
		} else {
			p.r = nil
		}
	}
	p.mu.Unlock()
	if r != nil {
		_ = r.Close()
		close(p.done)
	}
}

// record records ev. The recorder is the application's: it is called
// without p.mu, holding the producer open meanwhile instead.
func (p *qlogProducer) record(ev qlogwriter.Event) {
	p.mu.Lock()
	r := p.r
	if r == nil {
		p.mu.Unlock()
		return
	}
	p.holds++
	p.mu.Unlock()
	r.RecordEvent(ev)
	p.release()
}

// frameRaw returns the lengths of a frame of type t with a payload of n
// bytes.
func frameRaw(t FrameType, n uint64) qlog.RawInfo {
	hdr := wire.VarintLen(uint64(t)) + wire.VarintLen(n)
	return qlog.RawInfo{Length: hdr + int(n), PayloadLength: int(n)}
}

// frameCreated records a frame we wrote on stream id: f is one of
// http3/qlog's frame types, n the payload length.
func (p *qlogProducer) frameCreated(id quic.StreamID, t FrameType, n uint64, f any) {
	if p == nil {
		return
	}
	p.record(qlog.FrameCreated{StreamID: id, Raw: frameRaw(t, n), Frame: qlog.Frame{Frame: f}})
}

// frameParsed records a frame read on stream id.
func (p *qlogProducer) frameParsed(id quic.StreamID, t FrameType, n uint64, f any) {
	if p == nil {
		return
	}
	p.record(qlog.FrameParsed{StreamID: id, Raw: frameRaw(t, n), Frame: qlog.Frame{Frame: f}})
}

// controlStreamOpened records the type of our control stream and the
// SETTINGS frame that starts it.
func (p *qlogProducer) controlStreamOpened(id quic.StreamID, s settings) {
	if p == nil {
		return
	}
	p.record(qlog.StreamTypeSet{Initiator: qlog.InitiatorLocal, StreamID: id, StreamType: qlog.StreamTypeControl})
	p.frameCreated(id, frameTypeSettings, s.payloadLen(), s.qlogFrame())
}

// streamTypeSet records the type of a unidirectional stream the peer
// opened.
func (p *qlogProducer) streamTypeSet(id quic.StreamID, t StreamType) {
	if p == nil {
		return
	}
	ev := qlog.StreamTypeSet{Initiator: qlog.InitiatorRemote, StreamID: id}
	switch t {
	case streamTypeControl:
		ev.StreamType = qlog.StreamTypeControl
	case streamTypePush:
		ev.StreamType = qlog.StreamTypePush
	case streamTypeQPACKEncoder:
		ev.StreamType = qlog.StreamTypeQPACKEncode
	case streamTypeQPACKDecoder:
		ev.StreamType = qlog.StreamTypeQPACKDecode
	default:
		ev.StreamType, ev.StreamTypeBytes = qlog.StreamTypeUnknown, uint64(t)
	}
	p.record(ev)
}

// datagram records an HTTP Datagram (RFC 9297) sent or received for
// request stream id, of n bytes in all (Quarter Stream ID included).
func (p *qlogProducer) datagram(sent bool, id quic.StreamID, n int) {
	if p == nil {
		return
	}
	raw := qlog.RawInfo{Length: n, PayloadLength: n - wire.VarintLen(uint64(id)/4)}
	if sent {
		p.record(qlog.DatagramCreated{QuarterStreamID: uint64(id) / 4, Raw: raw})
	} else {
		p.record(qlog.DatagramParsed{QuarterStreamID: uint64(id) / 4, Raw: raw})
	}
}

// qlogFrame returns the qlog form of a SETTINGS frame. The two boolean
// settings are logged when on; the QPACK settings, which qlog does not
// name, go to Other with the unknown ones.
func (s settings) qlogFrame() qlog.SettingsFrame {
	f := qlog.SettingsFrame{MaxFieldSectionSize: -1, Datagram: -1, ExtendedConnect: -1, Other: s.otherMap()}
	if s.HasMaxFieldSectionSize {
		f.MaxFieldSectionSize = int64(min(s.MaxFieldSectionSize, wire.MaxVarint))
	}
	if s.H3Datagram {
		f.Datagram = 1
	}
	if s.EnableConnectProtocol {
		f.ExtendedConnect = 1
	}
	return f
}

// qlogFrameOf returns the qlog form of a parsed frame other than DATA and
// HEADERS (which their readers log).
func qlogFrameOf(f frame) any {
	switch f := f.(type) {
	case settings:
		return f.qlogFrame()
	case goAwayFrame:
		return qlog.GoAwayFrame{StreamID: quic.StreamID(f.ID)}
	case cancelPushFrame:
		return qlog.CancelPushFrame{}
	case maxPushIDFrame:
		return qlog.MaxPushIDFrame{}
	case pushPromiseFrame:
		return qlog.PushPromiseFrame{}
	}
	return nil
}

// qlogSkippedFrame returns the qlog form of a frame of a type we skip.
func qlogSkippedFrame(t FrameType) any {
	if isReservedCodePoint(uint64(t)) {
		return qlog.ReservedFrame{Type: uint64(t)}
	}
	return qlog.UnknownFrame{Type: uint64(t)}
}

// qlogFields collects the fields of a field section for a HEADERS event,
// when on: encoders and decoders add what they encode and decode.
type qlogFields struct {
	on     bool
	fields []qlog.HeaderField
}

func (q *qlogFields) reset() { q.fields = q.fields[:0] }

// add records one field; invalid names and values are marked, so the
// event logs their bytes.
func (q *qlogFields) add(name, value string, pseudo bool) {
	if q == nil || !q.on {
		return
	}
	q.fields = append(q.fields, qlog.HeaderField{Name: name, Value: value,
		InvalidName: !pseudo && !validFieldName(name), InvalidValue: !validFieldValue(value)})
}

// frame returns the HEADERS event's frame, with a copy of the fields
// (the recorder may encode the event after the buffer was reused).
func (q *qlogFields) frame() qlog.HeadersFrame {
	if q == nil {
		return qlog.HeadersFrame{}
	}
	return qlog.HeadersFrame{HeaderFields: slices.Clone(q.fields)}
}
