package recovery

import "github.com/turboretry/turboretry/internal/wire"

// sentQueue holds a space's sent packets in packet number order in a ring
// that grows by doubling and is reused, so steady-state sending allocates
// nothing. Packets are sent in increasing order, so the ring stays sorted
// and lookups are binary searches; numbers may be skipped. Acked and lost
// packets keep their slot, marked, until every older one is resolved too,
// so the slots between two outstanding packets are always present.
type sentQueue struct {
	buf  []SentPacket // len is a power of two
	head int          // index in buf of the oldest packet
	n    int

	anySent     bool
	largestSent uint64

	// skipped remembers the most recent ranges of packet numbers that were
	// never sent, so that an ACK for one is caught even after the ring
	// dropped the packets around it; made at the first skip (a handshake
	// space seldom has one).
	skipped     *[skippedHistory]wire.AckRange
	skippedNext int
	skippedLen  int
}

const (
	skippedHistory = 16
	// initialQueueSize is the first ring's size: a handshake space sends
	// a few packets; the application space doubles to what it needs once.
	initialQueueSize = 16
)

func (q *sentQueue) len() int { return q.n }

// at returns the i-th oldest packet.
func (q *sentQueue) at(i int) *SentPacket { return &q.buf[(q.head+i)&(len(q.buf)-1)] }

// push appends a packet whose number is above every earlier one.
func (q *sentQueue) push(p SentPacket) {
	if q.anySent && p.Number > q.largestSent+1 {
		q.recordSkipped(q.largestSent+1, p.Number-1)
	} else if !q.anySent && p.Number > 0 {
		q.recordSkipped(0, p.Number-1)
	}
	q.anySent = true
	q.largestSent = p.Number
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = p
	q.n++
}

func (q *sentQueue) grow() {
	size := max(initialQueueSize, 2*len(q.buf))
	buf := make([]SentPacket, size)
	for i := range q.n {
		buf[i] = *q.at(i)
	}
	q.buf = buf
	q.head = 0
}

// popResolved drops acked and lost packets from the front.
func (q *sentQueue) popResolved() {
	for q.n > 0 && q.at(0).state != stateOutstanding {
		*q.at(0) = SentPacket{} // drop the time.Location reference
		q.head = (q.head + 1) & (len(q.buf) - 1)
		q.n--
	}
}

// release forgets every packet and gives the storage back, for a space
// that will send nothing more; skipped ranges and the largest sent number
// stay, as packet numbers are never reused.
func (q *sentQueue) release() {
	q.buf, q.head, q.n = nil, 0, 0
}

// onlyAckOnlyOutstanding reports whether every packet still held is
// resolved or an outstanding one that neither elicits an ACK nor counts
// in flight (true for an empty queue).
func (q *sentQueue) onlyAckOnlyOutstanding() bool {
	for i := range q.n {
		if p := q.at(i); p.state == stateOutstanding && (p.AckEliciting || p.InFlight) {
			return false
		}
	}
	return true
}

// search returns the index of the oldest packet numbered pn or above
// (q.n when there is none).
func (q *sentQueue) search(pn uint64) int {
	lo, hi := 0, q.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if q.at(mid).Number < pn {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (q *sentQueue) recordSkipped(smallest, largest uint64) {
	if q.skipped == nil {
		q.skipped = new([skippedHistory]wire.AckRange)
	}
	q.skipped[q.skippedNext] = wire.AckRange{Smallest: smallest, Largest: largest}
	q.skippedNext = (q.skippedNext + 1) % skippedHistory
	q.skippedLen = min(q.skippedLen+1, skippedHistory)
}

// acksUnsent reports whether r covers a packet number that was never sent:
// above the largest sent, a remembered skipped number, or a gap among the
// packets still in the ring.
func (q *sentQueue) acksUnsent(r wire.AckRange) bool {
	if !q.anySent || r.Largest > q.largestSent {
		return true
	}
	for i := range q.skippedLen {
		s := q.skipped[i]
		if r.Smallest <= s.Largest && s.Smallest <= r.Largest {
			return true
		}
	}
	if q.n == 0 {
		return false
	}
	// Every number from the oldest tracked packet to largestSent was sent
	// unless skipped, so the ring must hold one packet per number of the
	// range's overlap with that span.
	oldest := q.at(0).Number
	if r.Largest < oldest {
		return false
	}
	lo := max(r.Smallest, oldest)
	present := q.search(r.Largest+1) - q.search(lo)
	return uint64(present) != r.Largest-lo+1
}
