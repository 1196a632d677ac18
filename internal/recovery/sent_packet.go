package recovery

import "time"

// SentPacket is what the loss detector keeps about one sent packet
// (RFC 9002 appendix A.1.1). It holds no frames: Handle is an opaque value
// the connection uses to find what the packet carried.
type SentPacket struct {
	Number       uint64    // packet number; increases within a space, gaps allowed
	TimeSent     time.Time // when the packet was handed to the socket
	Handle       uint64    // the connection's own reference to the frames sent
	Size         int       // bytes on the wire, counted in bytes in flight
	AckEliciting bool      // carries a frame other than ACK, PADDING or CONNECTION_CLOSE
	InFlight     bool      // counts against the congestion window (ack-eliciting or PADDING)
	// MTUProbe marks a path MTU probe: it counts in flight, but its loss
	// says the path is too narrow, not congested, so it is no congestion
	// signal (RFC 9000 section 14.4).
	MTUProbe bool

	state packetState
}

type packetState uint8

const (
	stateOutstanding packetState = iota
	stateAcked
	stateLost
)

// Events receives the packets one call acknowledged or declared lost. The
// caller owns it and reuses it across calls: the loss detector only appends,
// so Reset it before each call; in steady state nothing is allocated.
type Events struct {
	Acked []SentPacket
	Lost  []SentPacket
}

// Reset empties both lists and keeps their storage.
func (e *Events) Reset() {
	e.Acked = e.Acked[:0]
	e.Lost = e.Lost[:0]
}
