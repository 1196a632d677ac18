package quic

import (
	"context"
	"errors"
	"time"

	"github.com/turboretry/turboretry/internal/flowcontrol"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// streamSet is the connection's streams and the lists the packer and the
// accept calls work through. Guarded by Conn.mu, like the streams
// themselves.
type streamSet struct {
	all map[uint64]*stream
	// counts is the stream limits, both ways; blocked says an open waits
	// for the peer's limit and maxStreamsLost a MAX_STREAMS frame is to be
	// sent again, by dirIndex.
	counts         flowcontrol.StreamCounts
	blocked        [2]bool
	maxStreamsLost [2]bool
	sendList       []*stream // streams with data or a FIN to send
	ctrlList       []*stream // streams with control frames to send
	prioritized    bool      // a stream's priority was set: schedule by priority
	prioOrder      []*stream // scratch for appendStreamFramesByPriority
	acceptBidi     []*stream // opened by the peer, not accepted yet
	acceptUni      []*stream
	acceptableCB   func()        // NotifyAcceptable
	persp          Perspective   // ours: who opens which stream IDs
	sig            chan struct{} // broadcast: accept queues or stream limits changed
}

// connFlow is connection-level flow control (RFC 9000 section 4.1).
// Guarded by Conn.mu.
type connFlow struct {
	recv        *flowcontrol.ConnReceiver // what we let the peer send
	send        flowcontrol.SendCredit    // what the peer lets us send
	maxDataLost bool                      // a MAX_DATA frame is to be sent again
	// askingGrowth: Config.AllowConnectionWindowIncrease is being asked
	// about a growth of recv (Conn.askGrowth); one question at a time.
	askingGrowth bool
}

// takeGrowthRequest returns by how much recv asks to grow, for
// Config.AllowConnectionWindowIncrease, unless a question is out already or
// the connection is closed (then the request is dropped).
func (f *connFlow) takeGrowthRequest(closed bool) (uint64, bool) {
	if f.askingGrowth {
		return 0, false
	}
	delta, ok := f.recv.TakeGrowthRequest()
	f.askingGrowth = ok && !closed
	return delta, f.askingGrowth
}

// growthAnswered applies the answer to the question takeGrowthRequest
// returned.
func (f *connFlow) growthAnswered(delta uint64, allowed bool) {
	f.askingGrowth = false
	if allowed {
		f.recv.Grow(delta)
	}
}

// handleStreamFrame handles the stream and flow control frames.
func (c *Conn) handleStreamFrame(f *wire.Frame, now time.Time) error {
	ft := uint64(f.Type)
	withType := func(err error) error {
		var te *qerr.TransportError
		if errors.As(flowError(err), &te) {
			return qerr.NewTransportError(te.Code, ft, te.Reason)
		}
		return err
	}
	switch f.Type {
	case wire.FrameTypeMaxData:
		if c.flow.send.OnMaxData(f.Limit) {
			c.streams.wakeAllSenders()
		}
		return nil
	case wire.FrameTypeMaxStreamsBidi, wire.FrameTypeMaxStreamsUni:
		d := flowcontrol.Bidi
		if f.Type == wire.FrameTypeMaxStreamsUni {
			d = flowcontrol.Uni
		}
		raised, err := c.streams.counts.Outgoing(d).OnMaxStreams(f.Limit)
		if err != nil {
			return withType(err)
		}
		if raised {
			broadcast(&c.streams.sig)
		}
		return nil
	case wire.FrameTypeDataBlocked, wire.FrameTypeStreamsBlockedBidi, wire.FrameTypeStreamsBlockedUni:
		c.stats.blockedRecv++
		return nil
	}
	if f.Type == wire.FrameTypeResetStreamAt && !c.config.EnableStreamResetPartialDelivery {
		// Not advertised, so an unknown frame type to us (RFC 9000
		// section 12.4), as quic-go treats it.
		return qerr.NewFrameEncodingError(ft, "RESET_STREAM_AT without reset_stream_at")
	}
	peerSends := f.Type == wire.FrameTypeStream || f.Type == wire.FrameTypeResetStream ||
		f.Type == wire.FrameTypeResetStreamAt || f.Type == wire.FrameTypeStreamDataBlocked
	first, n, err := c.streams.counts.OnPeerFrame(f.StreamID, peerSends)
	if err != nil {
		return withType(err)
	}
	if n > 0 {
		c.streams.openPeerStreams(c, f.StreamID, first, n, &c.out)
	}
	s := c.streams.all[f.StreamID]
	if s == nil {
		return nil // a stream that is already closed
	}
	switch f.Type {
	case wire.FrameTypeStream:
		if err := s.fcRecv.OnStreamFrame(f.Offset, uint64(len(f.Data)), f.Fin); err != nil {
			return withType(err)
		}
		if len(f.Data) > 0 {
			s.fcRecv.NoteArrival(now)
		}
		if f.Fin {
			s.noteFinalSize()
		}
		if s.recvErr != nil || s.eofRead {
			if f.Fin {
				s.maybeRemove() // the final size of a stream we stopped reading
			}
			return nil
		}
		data, fin := f.Data, f.Fin
		if s.peerReset != nil {
			// After RESET_STREAM_AT only the bytes below its reliable
			// size are read: later ones are not kept.
			data, fin = data[:min(uint64(len(data)), s.peerReliable-min(f.Offset, s.peerReliable))], false
		}
		if err := s.recv.Push(f.Offset, data, fin); err != nil {
			return bufferError(err, ft)
		}
		c.recvMem.charge(s)
		if reason, over := c.recvMem.overLimit(c.config); over {
			// Out-of-order data over a per-connection limit.
			err := qerr.NewTransportError(qerr.ProtocolViolation, ft, reason.message())
			c.closeForMemory(reason, err)
			return err
		}
		s.signalRead()
		if f.Fin {
			s.maybeRemove() // a bare FIN after everything was read
		}
	case wire.FrameTypeResetStream, wire.FrameTypeResetStreamAt:
		if err := s.onPeerReset(f); err != nil {
			return withType(err)
		}
	case wire.FrameTypeStopSending:
		s.onStopSending(f.ErrorCode)
	case wire.FrameTypeMaxStreamData:
		if s.fcSend.OnMaxStreamData(f.Limit) {
			s.signalWrite() // the writer may queue more (writeRoom)
			s.queueSend()
		}
	case wire.FrameTypeStreamDataBlocked:
		c.stats.blockedRecv++
	}
	return nil
}

// wakeAllSenders follows a MAX_DATA increase: streams with data go back
// into the send list and waiting writers may queue more (writeRoom).
func (ss *streamSet) wakeAllSenders() {
	for _, s := range ss.all {
		if !s.hasSend {
			continue
		}
		s.signalWrite()
		if s.send.HasData() || s.limited != nil {
			s.queueSend()
		}
	}
}

// openPeerStreams creates the streams of connection c a peer's frame
// implicitly opened (n of them from the first'th, of stream id's kind),
// and queues the NotifyAcceptable callback in out.
func (ss *streamSet) openPeerStreams(c *Conn, id, first, n uint64, out *callbackOutbox) {
	d := flowcontrol.DirectionOf(id)
	for num := first; num < first+n; num++ {
		sid, err := flowcontrol.NthStreamID(num, flowcontrol.Initiator(id), d)
		if err != nil {
			return
		}
		s := newStream(c, sid)
		if d == flowcontrol.Bidi {
			ss.acceptBidi = append(ss.acceptBidi, s)
		} else {
			ss.acceptUni = append(ss.acceptUni, s)
		}
	}
	broadcast(&ss.sig)
	if cb := ss.acceptableCB; cb != nil && ss.acceptable() {
		ss.acceptableCB = nil
		out.notifications = append(out.notifications, cb)
	}
}

// NotifyAcceptable calls cb once, as soon as a stream the peer opened
// waits to be accepted (AcceptStream, AcceptUniStream or AcceptAnyStream
// would return it without waiting): at once on the caller's goroutine
// when one waits already, otherwise on the connection's goroutine,
// without its locks; cb must not block. It is not called for the
// connection's end (Context tells that). A later call replaces cb; nil
// cancels it. With it a server can leave a quiet connection without an
// accepting goroutine.
func (c *Conn) NotifyAcceptable(cb func()) {
	c.mu.Lock()
	c.streams.acceptableCB = nil
	now := cb != nil && c.streams.acceptable()
	if cb != nil && !now {
		c.streams.acceptableCB = cb
	}
	c.mu.Unlock()
	if now {
		cb()
	}
}

// acceptable reports whether a peer stream waits to be accepted.
func (ss *streamSet) acceptable() bool {
	return len(ss.acceptBidi) > 0 || len(ss.acceptUni) > 0
}

// AcceptStream returns the next bidirectional stream the peer opened.
func (c *Conn) AcceptStream(ctx context.Context) (*Stream, error) {
	s, err := c.accept(ctx, false, true)
	if err != nil {
		return nil, err
	}
	return &Stream{s}, nil
}

// AcceptUniStream returns the next unidirectional stream the peer opened.
func (c *Conn) AcceptUniStream(ctx context.Context) (*ReceiveStream, error) {
	s, err := c.accept(ctx, true, false)
	if err != nil {
		return nil, err
	}
	return &ReceiveStream{s}, nil
}

// AcceptAnyStream returns the next stream the peer opened, of either
// direction: a bidirectional one as str, a unidirectional one as rs (the
// other is nil). It lets one goroutine serve both kinds, where
// AcceptStream and AcceptUniStream would take one each; with both kinds
// queued the unidirectional stream comes first.
func (c *Conn) AcceptAnyStream(ctx context.Context) (str *Stream, rs *ReceiveStream, err error) {
	s, err := c.accept(ctx, true, true)
	if err != nil {
		return nil, nil, err
	}
	if flowcontrol.DirectionOf(s.id) == flowcontrol.Uni {
		return nil, &ReceiveStream{s}, nil
	}
	return &Stream{s}, nil, nil
}

// releaseIdle drops the stream lists' arrays while they are empty, for a
// parking connection: they grow again on the next send or accept.
func (ss *streamSet) releaseIdle() {
	for _, list := range []*[]*stream{&ss.sendList, &ss.ctrlList, &ss.prioOrder, &ss.acceptBidi, &ss.acceptUni} {
		if len(*list) == 0 {
			*list = nil
		}
	}
}

// popStream takes the first stream of an accept queue, or nil.
func popStream(q *[]*stream) *stream {
	if len(*q) == 0 {
		return nil
	}
	s := (*q)[0]
	(*q)[0] = nil
	*q = (*q)[1:]
	return s
}

// accept takes the next stream the peer opened from the accept queues
// asked for (the unidirectional one first), waiting for one; it fails
// once none can come (the connection closed, 0-RTT was rejected) or ctx
// ends.
func (c *Conn) accept(ctx context.Context, uni, bidi bool) (*stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if uni && len(c.streams.acceptUni) > 0 {
			return popStream(&c.streams.acceptUni), nil
		}
		if bidi && len(c.streams.acceptBidi) > 0 {
			return popStream(&c.streams.acceptBidi), nil
		}
		if c.close.err != nil {
			return nil, c.close.err
		}
		if c.early.awaitingNext {
			return nil, Err0RTTRejected
		}
		if err := c.waitLocked(ctx, waitChan(&c.streams.sig), nil, time.Time{}); err != nil {
			return nil, err
		}
	}
}

// OpenStream opens a bidirectional stream, or fails with
// StreamLimitReachedError when the peer's limit allows none now.
func (c *Conn) OpenStream() (*Stream, error) {
	s, err := c.open(context.Background(), false, flowcontrol.Bidi)
	if err != nil {
		return nil, err
	}
	return &Stream{s}, nil
}

// OpenStreamSync opens a bidirectional stream, waiting for the peer's limit.
func (c *Conn) OpenStreamSync(ctx context.Context) (*Stream, error) {
	s, err := c.open(ctx, true, flowcontrol.Bidi)
	if err != nil {
		return nil, err
	}
	return &Stream{s}, nil
}

// OpenUniStream opens a unidirectional stream, or fails with
// StreamLimitReachedError when the peer's limit allows none now.
func (c *Conn) OpenUniStream() (*SendStream, error) {
	s, err := c.open(context.Background(), false, flowcontrol.Uni)
	if err != nil {
		return nil, err
	}
	return &SendStream{s}, nil
}

// OpenUniStreamSync opens a unidirectional stream, waiting for the peer's
// limit.
func (c *Conn) OpenUniStreamSync(ctx context.Context) (*SendStream, error) {
	s, err := c.open(ctx, true, flowcontrol.Uni)
	if err != nil {
		return nil, err
	}
	return &SendStream{s}, nil
}

// open opens a stream of direction d. Only a waiting open (wait) uses ctx.
func (c *Conn) open(ctx context.Context, wait bool, d flowcontrol.Direction) (*stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.close.err != nil {
			return nil, c.close.err
		}
		if c.early.awaitingNext {
			return nil, Err0RTTRejected
		}
		id, err := c.streams.counts.OpenStream(d)
		if err == nil {
			return newStream(c, id), nil
		}
		if !errors.Is(err, flowcontrol.ErrStreamsBlocked) {
			return nil, err
		}
		// Tell the peer we would open more (STREAMS_BLOCKED, once per
		// limit).
		c.streams.blocked[dirIndex(d)] = true
		c.wake()
		if !wait {
			return nil, &StreamLimitReachedError{}
		}
		if err := c.waitLocked(ctx, waitChan(&c.streams.sig), nil, time.Time{}); err != nil {
			return nil, err
		}
	}
}

// dirIndex maps a stream direction (bit 1 of the stream ID: 0 or 2) to an
// index into the per-direction arrays, bidirectional first.
func dirIndex(d flowcontrol.Direction) int { return int(d >> 1) }
