package quic

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/flowcontrol"
	"github.com/turboretry/turboretry/internal/streambuf"
	"github.com/turboretry/turboretry/internal/wire"
)

// maxStreamBuffered bounds the bytes a stream's writer may queue beyond what
// was sent; Write blocks above it.
const maxStreamBuffered = 1 << 20

// stream is the state of one stream, shared by the Stream, SendStream and
// ReceiveStream handles. Everything is guarded by the connection's mutex.
type stream struct {
	c       *Conn
	id      uint64
	hasSend bool
	hasRecv bool
	// sendCtxMade says sendCtx is set, for Context calls that take no lock.
	sendCtxMade atomic.Bool

	// Send side.
	send       streambuf.SendBuffer
	fcSend     flowcontrol.StreamSender
	sendClosed bool // Close was called
	// writeWaiting: a Write waits for flow control credit with data it
	// could not queue (the peer is told with the blocked frames).
	writeWaiting bool
	// drainWaiting: a Write that queued its data waits for the packer
	// (drainLocked).
	drainWaiting  bool
	sendErr       error // CancelWrite or STOP_SENDING
	resetPending  bool
	resetSent     bool
	resetAcked    bool
	resetCode     uint64
	resetFinal    uint64
	writeDeadline time.Time
	writeSig      chan struct{}
	inSendList    bool
	sendCharged   int64 // bytes counted in the connection's budget.sendHeld
	// sendCtx is the handles' Context, made by the first call (most
	// streams are never asked: the context, its cancel function and its
	// entry in the connection context's children are saved). sendCause is
	// why the send side ended, for a context made after that.
	sendCtx    context.Context
	sendCancel context.CancelCauseFunc
	sendCause  error
	limited    *limitedWrite // a WriteWithLimit waiting for its limiter
	urgency    int8          // SetPriority (RFC 9218); default 3
	nonIncr    bool          // not incremental: served whole, in ID order
	// reliableSize is what SetReliableBoundary marked; resetReliable the
	// Reliable Size of the reset being sent: RESET_STREAM_AT when above
	// 0, and the data below it is still delivered (resetDue).
	reliableSize  uint64
	resetReliable uint64

	// Receive side.
	recv         *streambuf.RecvBuffer // nil without a receive side
	fcRecv       flowcontrol.StreamReceiver
	recvErr      error      // RESET_STREAM or CancelRead
	recvCharged  recvCharge // counted in the connection's recvMem
	eofRead      bool       // Read returned io.EOF
	resetRecvd   bool
	stopPending  bool
	stopAcked    bool
	stopCode     uint64
	maxDataLost  bool
	readDeadline time.Time
	readSig      chan struct{}
	inCtrlList   bool
	removed      bool
	// creditHeld (RequireStreamCreditRelease): the stream is done but
	// still counts against the peer's stream limit until
	// ReleaseStreamCredit; creditReleased: it was called.
	creditHeld     bool
	creditReleased bool
	finalSizeCB    func(int64) // SetReceiveFinalSizeCallback
	finalSizeTold  bool        // finalSizeCB was called
	readableCB     func()      // NotifyReadable, until a Read would not block
	// peerReset is the error of a RESET_STREAM_AT the reader does not see
	// yet: first it reads up to peerReliable (finishPeerReset).
	// peerResetCode is the code of any reset received (peerResetKnown),
	// which the peer must not change.
	peerReset      *StreamError
	peerReliable   uint64
	peerResetCode  uint64
	peerResetKnown bool
}

// newStream creates stream id of connection c and adds it to c.streams.
func newStream(c *Conn, id uint64) *stream {
	s := &stream{
		c:       c,
		id:      id,
		hasSend: flowcontrol.LocalCanSend(id, c.streams.persp),
		hasRecv: flowcontrol.LocalCanReceive(id, c.streams.persp),
		urgency: defaultUrgency,
	}
	if s.hasSend {
		var limit uint64
		if c.hs.peerParams != nil {
			p := c.hs.peerParams
			switch {
			case flowcontrol.DirectionOf(id) == flowcontrol.Uni:
				limit = p.InitialMaxStreamDataUni
			case flowcontrol.Initiator(id) == c.streams.persp:
				limit = p.InitialMaxStreamDataBidiRemote
			default:
				limit = p.InitialMaxStreamDataBidiLocal
			}
		}
		s.fcSend.Init(&c.flow.send, limit)
	} else {
		s.sendCause = context.Canceled
	}
	if s.hasRecv {
		// Flow control rejects data beyond the window first; the buffer's
		// own bound is the largest window auto-tuning may reach.
		s.recv = streambuf.NewRecvBuffer(c.config.MaxStreamReceiveWindow)
		s.fcRecv.Init(id, c.flow.recv, flowcontrol.WindowConfig{
			Initial: c.config.InitialStreamReceiveWindow,
			Max:     c.config.MaxStreamReceiveWindow,
		})
	}
	c.streams.all[id] = s
	return s
}

// broadcast wakes everyone waiting on *ch. Channels are created only by
// waiters (waitChan), so signaling with nobody waiting costs nothing.
func broadcast(ch *chan struct{}) {
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}

// waitChan returns the channel the next broadcast on *ch closes.
func waitChan(ch *chan struct{}) chan struct{} {
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

func (s *stream) signalWrite() { broadcast(&s.writeSig) }
func (s *stream) signalRead() {
	broadcast(&s.readSig)
	s.noteReadable()
}

func (s *stream) onConnClosed() {
	s.signalRead()
	s.signalWrite()
	s.endSend(s.c.close.err)
}

// endSend cancels the send side's context with cause; the first cause
// stays, as with context.WithCancelCause.
func (s *stream) endSend(cause error) {
	if s.sendCause != nil {
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	s.sendCause = cause
	if s.sendCancel != nil {
		s.sendCancel(cause)
	}
}

// context returns the send side's context, made on the first call: a
// child of the connection's, or, once the send side ended, one already
// canceled with its cause (with the connection context's values).
func (s *stream) context() context.Context {
	if s.sendCtxMade.Load() {
		return s.sendCtx
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.sendCtx == nil {
		if s.sendCause != nil {
			s.sendCtx, s.sendCancel = context.WithCancelCause(context.WithoutCancel(c.ctx))
			s.sendCancel(s.sendCause)
		} else {
			s.sendCtx, s.sendCancel = context.WithCancelCause(c.ctx)
		}
		s.sendCtxMade.Store(true)
	}
	return s.sendCtx
}

// sendFinished reports whether the send side needs nothing more.
func (s *stream) sendFinished() bool {
	if !s.hasSend {
		return true
	}
	if s.sendErr != nil {
		// After RESET_STREAM_AT the bytes below its reliable size must be
		// acknowledged too.
		return s.resetAcked && (s.send.IsReset() || s.send.AllAcked())
	}
	return s.send.AllAcked()
}

// recvFinished reports whether the receive side needs nothing more.
func (s *stream) recvFinished() bool {
	if !s.hasRecv {
		return true
	}
	// allRead covers a FIN that arrives after the reader took the last
	// bytes: Read still reports io.EOF later, but nothing is owed the peer.
	// After CancelRead the peer's final size is still owed: its
	// RESET_STREAM (or FIN) tells how much it sent, which the connection's
	// flow control must count (RFC 9000 section 4.5); forgetting the
	// stream at the STOP_SENDING's ACK leaked the rest of the peer's
	// connection credit.
	_, finalKnown := s.fcRecv.FinalSize()
	return s.eofRead || s.resetRecvd || (s.recvErr != nil && s.stopAcked && finalKnown) || (s.recvErr == nil && s.allRead())
}

// maybeRemove forgets a stream both of whose sides are done, and lets
// the peer open another if it was theirs.
func (s *stream) maybeRemove() {
	c := s.c
	if s.removed || !s.sendFinished() || !s.recvFinished() || s.inCtrlList {
		return
	}
	s.removed = true
	s.send.Reset() // gives the chunks back
	c.budget.charge(s)
	c.recvMem.release(s)
	delete(c.streams.all, s.id)
	if flowcontrol.Initiator(s.id) != c.streams.persp {
		if c.config.RequireStreamCreditRelease && !s.creditReleased {
			s.creditHeld = true
			return
		}
		s.giveBackCredit()
	}
}

// giveBackCredit lets the peer open another stream in place of s.
func (s *stream) giveBackCredit() {
	c := s.c
	s.creditHeld = false
	inc := c.streams.counts.Incoming(flowcontrol.DirectionOf(s.id))
	_ = inc.Close()
	if inc.NeedsUpdate() {
		c.wake() // the peer may be waiting for MAX_STREAMS
	}
}

// queueSend puts s in the send list if it has data (or a FIN) to send
// and wakes the connection.
func (s *stream) queueSend() {
	c := s.c
	if !s.inSendList && (s.send.HasData() || s.limited != nil) {
		s.inSendList = true
		c.streams.sendList = append(c.streams.sendList, s)
	}
	c.wake()
}

// queueControl puts s in the list of streams with control frames to send
// and wakes the connection.
func (s *stream) queueControl() {
	c := s.c
	if !s.inCtrlList {
		s.inCtrlList = true
		c.streams.ctrlList = append(c.streams.ctrlList, s)
	}
	c.wake()
}

func (s *stream) hasControlFrames() bool {
	return (s.resetPending && s.resetDue()) || s.stopPending || s.maxDataLost || (s.hasRecv && s.recvErr == nil && !s.eofRead && s.fcRecv.NeedsUpdate()) ||
		s.blockedWriterDue()
}

// blockedWriterDue reports whether a writer waits for credit with nothing
// queued and the peer has not yet been told (the blocked frames otherwise
// ride with the STREAM frame that used the credit up).
func (s *stream) blockedWriterDue() bool {
	return s.writeWaiting && s.sendErr == nil && s.send.Unsent() == 0 && s.fcSend.BlockedDue()
}

func (s *stream) appendControlFrames(b []byte, maxEnd int, now time.Time, srtt time.Duration, p *sentPacket) []byte {
	var ok bool
	if s.blockedWriterDue() {
		b = s.appendBlocked(b, maxEnd, p, 0)
	}
	if s.resetPending && s.resetDue() {
		f := wire.Frame{Type: wire.FrameTypeResetStream, StreamID: s.id, ErrorCode: s.resetCode, FinalSize: s.resetFinal}
		if s.resetReliable > 0 {
			f.Type, f.ReliableSize = wire.FrameTypeResetStreamAt, s.resetReliable
		}
		if b, ok = appendIfFits(b, maxEnd, &f); ok {
			s.resetPending = false
			s.resetSent = true
			// off: the Reliable Size, so that the ack or loss of a
			// RESET_STREAM_AT replaced by a RESET_STREAM is told apart.
			p.frames = append(p.frames, sentFrame{kind: sfResetStream, id: s.id, off: s.resetReliable})
		}
	}
	if s.stopPending {
		f := wire.Frame{Type: wire.FrameTypeStopSending, StreamID: s.id, ErrorCode: s.stopCode}
		if b, ok = appendIfFits(b, maxEnd, &f); ok {
			s.stopPending = false
			p.frames = append(p.frames, sentFrame{kind: sfStopSending, id: s.id})
		}
	}
	if s.hasRecv && s.recvErr == nil && !s.eofRead && (s.maxDataLost || s.fcRecv.NeedsUpdate()) {
		f := wire.Frame{Type: wire.FrameTypeMaxStreamData, StreamID: s.id, Limit: s.fcRecv.Limit() + 1<<24}
		if wire.FrameLen(&f) <= maxEnd-len(b) {
			limit := s.fcRecv.Limit()
			if l, upd := s.fcRecv.MaybeUpdate(now, srtt); upd {
				limit = l
			}
			f.Limit = limit
			b = wire.AppendFrame(b, &f)
			s.maxDataLost = false
			p.frames = append(p.frames, sentFrame{kind: sfMaxStreamData, id: s.id})
		}
	} else {
		s.maxDataLost = false
	}
	return b
}

// appendStreamFrame appends one STREAM frame of this stream if anything
// fits and flow control allows it. Lost data goes first and needs no new
// credit; new data is bounded by the peer's limits.
func (s *stream) appendStreamFrame(b []byte, maxEnd int, p *sentPacket) ([]byte, bool) {
	if s.sendErr != nil && s.resetReliable == 0 {
		return b, false
	}
	left := maxEnd - len(b)
	maxLen := max(wire.MaxStreamDataLen(s.id, s.send.NextOffset(), left, true), 0)
	if lw := s.limited; lw != nil && s.sendErr == nil {
		s.appendLimited(maxLen)
		if !lw.done && s.send.Unsent() == 0 && s.fcSend.Available() == 0 {
			b = s.appendBlocked(b, maxEnd, p, 0) // the limited write waits for credit
		}
	}
	off, n, fin, retx := s.send.PeekFrame(maxLen)
	if !retx {
		// When this frame uses up the credit and more data waits (queued
		// beyond it, or a writer that could not queue), the blocked frames
		// go in front of it, in the same packet, as quic-go sends them.
		avail := s.fcSend.Available()
		more := uint64(n) > avail || s.writeWaiting || (s.limited != nil && !s.limited.done)
		grew := false
		if more && min(uint64(n), avail) == avail {
			before := len(b)
			b = s.appendBlocked(b, maxEnd, p, avail)
			grew = len(b) != before
			left = maxEnd - len(b)
		}
		if uint64(n) > avail || grew {
			maxLen = int(min(avail, uint64(max(wire.MaxStreamDataLen(s.id, s.send.NextOffset(), left, true), 0))))
			off, n, fin, _ = s.send.PeekFrame(maxLen)
		}
	}
	if (n == 0 && !fin) || wire.StreamFrameLen(s.id, off, n, true) > left {
		return b, false
	}
	b = wire.AppendStreamFrameHeader(b, s.id, off, n, fin, true)
	b, off, n, fin, retx = s.send.AppendFrameData(b, maxLen)
	if !retx && n > 0 {
		_ = s.fcSend.Consume(uint64(n))
		if s.drainWaiting && s.send.Unsent() <= writeDrain {
			s.c.send.wakeDrained(&s.writeSig)
		}
	}
	p.frames = append(p.frames, sentFrame{kind: sfStream, id: s.id, off: off, n: uint64(n), fin: fin})
	if s.resetPending && s.resetDue() {
		s.queueControl() // the RESET_STREAM_AT waited for this data
	}
	return b, true
}

// appendBlocked appends STREAM_DATA_BLOCKED and DATA_BLOCKED, once per
// limit, when flow control holds back data the stream has to send (RFC
// 9000 section 4.1): the peer learns it should raise its limits. n is
// what the packet sends of the stream's new data after them.
func (s *stream) appendBlocked(b []byte, maxEnd int, p *sentPacket, n uint64) []byte {
	var ok bool
	if limit, send := s.fcSend.StreamDataBlockedAfter(n); send {
		f := wire.Frame{Type: wire.FrameTypeStreamDataBlocked, StreamID: s.id, Limit: limit}
		if b, ok = appendIfFits(b, maxEnd, &f); ok {
			p.eliciting = true
		}
	}
	if limit, send := s.c.flow.send.BlockedAfter(n); send {
		f := wire.Frame{Type: wire.FrameTypeDataBlocked, Limit: limit}
		if b, ok = appendIfFits(b, maxEnd, &f); ok {
			p.eliciting = true
		}
	}
	return b
}
