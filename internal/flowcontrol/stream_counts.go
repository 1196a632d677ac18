package flowcontrol

import "github.com/turboretry/turboretry/internal/protocol"

// StreamCounts holds the four stream count limits of a connection and
// validates the stream IDs in the peer's frames.
type StreamCounts struct {
	local         protocol.Perspective
	inBidi, inUni IncomingStreams
	outBidi       OutgoingStreams
	outUni        OutgoingStreams
}

// Init sets our perspective and the incoming limits we advertise. The
// outgoing limits start at zero until SetPeerLimits.
func (c *StreamCounts) Init(local protocol.Perspective, maxIncomingBidi, maxIncomingUni uint64) {
	*c = StreamCounts{local: local}
	c.inBidi.Init(maxIncomingBidi)
	c.inUni.Init(maxIncomingUni)
}

// SetPeerLimits applies the peer's initial_max_streams_bidi and
// initial_max_streams_uni transport parameters.
func (c *StreamCounts) SetPeerLimits(bidi, uni uint64) error {
	if err := c.outBidi.Init(bidi); err != nil {
		return err
	}
	return c.outUni.Init(uni)
}

// Incoming returns the limit on streams of direction d the peer opens.
func (c *StreamCounts) Incoming(d Direction) *IncomingStreams {
	if d == Uni {
		return &c.inUni
	}
	return &c.inBidi
}

// Outgoing returns the limit on streams of direction d we open.
func (c *StreamCounts) Outgoing(d Direction) *OutgoingStreams {
	if d == Uni {
		return &c.outUni
	}
	return &c.outBidi
}

// OpenStream takes the ID of the next stream of direction d we open, or
// returns ErrStreamsBlocked.
func (c *StreamCounts) OpenStream(d Direction) (uint64, error) {
	num, err := c.Outgoing(d).Open()
	if err != nil {
		return 0, err
	}
	return num<<2 | uint64(d) | initiatorBit(c.local), nil
}

// OnPeerFrame validates stream id named in a frame from the peer. peerSends
// is true for frames about data the peer sends (STREAM, RESET_STREAM,
// STREAM_DATA_BLOCKED) and false for frames about data we send
// (MAX_STREAM_DATA, STOP_SENDING). For a peer-initiated stream it returns
// the stream numbers the frame opens (first, and how many; n is 0 when the
// stream already existed). Errors are STREAM_STATE_ERROR for the wrong
// direction or for our own stream that we never opened, and
// STREAM_LIMIT_ERROR beyond the advertised limit.
func (c *StreamCounts) OnPeerFrame(id uint64, peerSends bool) (first, n uint64, err error) {
	if id > MaxStreamID {
		return 0, 0, newError(FrameEncodingError, "stream ID %d above 2^62-1", id)
	}
	if peerSends && !LocalCanReceive(id, c.local) {
		return 0, 0, newError(StreamStateError, "peer sends on our send-only stream %d", id)
	}
	if !peerSends && !LocalCanSend(id, c.local) {
		return 0, 0, newError(StreamStateError, "peer controls sending on our receive-only stream %d", id)
	}
	dir, num := DirectionOf(id), StreamNum(id)
	if Initiator(id) == c.local {
		if num >= c.Outgoing(dir).opened {
			return 0, 0, newError(StreamStateError, "stream %d not opened yet", id)
		}
		return 0, 0, nil
	}
	return c.Incoming(dir).Open(num)
}
