package recovery

import (
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// Adaptive reordering tolerance (RFC 9002 sections 6.1.1 and 6.1.2 allow
// it; RFC 8985 section 6.2 grows its reordering window the same way). The
// loss detector remembers what it recently declared lost in the
// ApplicationData space; an ACK that covers one of those packets proves the
// loss spurious: the packet was reordered, not dropped. Each such packet
//
//   - raises the packet threshold past the reordering distance observed
//     (largest acknowledged minus the packet's number), up to
//     maxPacketThreshold;
//   - raises the time threshold so that the delay observed (from sending
//     the packet to the peer acknowledging it) would not have condemned
//     it, up to maxTimeThresholdEighths;
//   - is reported to the congestion controller, which undoes the window
//     reduction once every loss behind it proved spurious.
//
// Thresholds only grow: a path that reordered once is expected to do it
// again, and a late loss declaration costs a little delay while a spurious
// one costs a retransmission. A new path starts from the RFC defaults.
// The Initial and Handshake spaces always use the defaults: they carry a
// handful of packets, too few to learn from.
const (
	// defaultPacketThreshold is kPacketThreshold (RFC 9002 section 6.1.1).
	defaultPacketThreshold = 3
	// maxPacketThreshold caps the packet threshold. Past it the time
	// threshold, at most 2 RTTs, is what declares losses anyway at any
	// rate a path of a few milliseconds' RTT would carry so many packets.
	maxPacketThreshold = 1024
	// defaultTimeThresholdEighths is kTimeThreshold, 9/8 (RFC 9002
	// section 6.1.2), in eighths of an RTT.
	defaultTimeThresholdEighths = 9
	// maxTimeThresholdEighths caps the time threshold at two RTTs, as
	// quic-go does: beyond that, genuine losses wait too long.
	maxTimeThresholdEighths = 16

	// lostHistoryLen bounds how many lost packets are remembered: the
	// oldest is forgotten when a new one needs its slot. 64 covers the
	// losses of a round trip at a percent of loss and tens of MB/s.
	lostHistoryLen = 64
	// lostHistoryPTOs bounds how long a lost packet is remembered, in
	// probe timeouts from when it was sent: an acknowledgment later than
	// that comes after the loss was long repaired and the window regrown,
	// and says little about the reordering a threshold must absorb.
	lostHistoryPTOs = 3
)

// lostRecord is a packet declared lost whose loss the congestion
// controller counted (in flight, not an MTU probe).
type lostRecord struct {
	number   uint64
	timeSent time.Time
	size     int32 // packet sizes fit: a UDP payload is under 64 KiB
	gone     bool  // acknowledged since; the slot waits to be popped
}

// lostHistory is a ring of the most recent lost records, oldest first.
// Losses are declared in packet number order within a space, so the ring
// is sorted. Its storage is allocated on the first loss only, as many
// connections never lose a packet.
type lostHistory struct {
	buf  *[lostHistoryLen]lostRecord
	head int
	n    int
}

func (h *lostHistory) at(i int) *lostRecord { return &h.buf[(h.head+i)%lostHistoryLen] }

// add records a loss, forgetting the oldest record when the ring is full.
func (h *lostHistory) add(number uint64, timeSent time.Time, size int) {
	if h.buf == nil {
		h.buf = new([lostHistoryLen]lostRecord)
	}
	if h.n > 0 && number <= h.at(h.n-1).number {
		return // out of order: impossible for one space, ignored to keep the ring sorted
	}
	if h.n == lostHistoryLen {
		h.pop()
	}
	*h.at(h.n) = lostRecord{number: number, timeSent: timeSent, size: int32(size)}
	h.n++
}

func (h *lostHistory) pop() {
	*h.at(0) = lostRecord{} // drop the time.Location reference
	h.head = (h.head + 1) % lostHistoryLen
	h.n--
}

// expire forgets records sent before cutoff and acknowledged ones at the
// front.
func (h *lostHistory) expire(cutoff time.Time) {
	for h.n > 0 && (h.at(0).gone || h.at(0).timeSent.Before(cutoff)) {
		h.pop()
	}
}

func (h *lostHistory) reset() {
	for h.n > 0 {
		h.pop()
	}
	h.head = 0
}

// reordering is the adaptive part of loss detection in the ApplicationData
// space.
type reordering struct {
	packetThreshold uint64
	timeEighths     int64
	lost            lostHistory
	spurious        uint64 // packets declared lost, then acknowledged
	undos           uint64 // window reductions the controller reverted
}

func newReordering() reordering {
	return reordering{packetThreshold: defaultPacketThreshold, timeEighths: defaultTimeThresholdEighths}
}

// resetThresholds returns to the RFC defaults and forgets the lost
// packets, for a new path; the counters stay.
func (o *reordering) resetThresholds() {
	o.packetThreshold = defaultPacketThreshold
	o.timeEighths = defaultTimeThresholdEighths
	o.lost.reset()
}

// ReorderingStats is what the loss detector learned about reordering.
type ReorderingStats struct {
	// SpuriousLosses counts packets declared lost that the peer
	// acknowledged later.
	SpuriousLosses uint64
	// Undos counts window reductions the congestion controller reverted
	// because every loss behind them proved spurious.
	Undos uint64
	// PacketThreshold is the ApplicationData packet threshold in use.
	PacketThreshold uint64
	// TimeThreshold is the ApplicationData time threshold in use, in RTTs.
	TimeThreshold float64
}

// Reordering returns the reordering statistics and the thresholds in use.
func (r *Recovery) Reordering() ReorderingStats {
	return ReorderingStats{
		SpuriousLosses:  r.reorder.spurious,
		Undos:           r.reorder.undos,
		PacketThreshold: r.reorder.packetThreshold,
		TimeThreshold:   float64(r.reorder.timeEighths) / 8,
	}
}

// thresholds returns the packet threshold and loss delay for a space.
func (r *Recovery) thresholds(space protocol.PacketNumberSpace) (uint64, time.Duration) {
	if space != protocol.SpaceAppData {
		return defaultPacketThreshold, r.rtt.LossDelay()
	}
	return r.reorder.packetThreshold, r.lossDelay(r.reorder.timeEighths)
}

// lossDelay is the time threshold for a multiplier of eighths RTTs:
// eighths/8 * max(smoothed_rtt, latest_rtt), at least kGranularity.
func (r *Recovery) lossDelay(eighths int64) time.Duration {
	return max(r.lossDelayBase()*time.Duration(eighths)/8, Granularity)
}

func (r *Recovery) lossDelayBase() time.Duration {
	return max(r.rtt.SmoothedRTT(), r.rtt.LatestRTT())
}

// recordLost remembers a lost ApplicationData packet the controller
// counted, so that an acknowledgment of it can be recognised.
func (r *Recovery) recordLost(p *SentPacket) {
	r.reorder.lost.add(p.Number, p.TimeSent, p.Size)
}

// detectSpurious finds the remembered lost packets an ACK frame covers
// (ranges are validated, largest first), adapts the thresholds to the
// reordering they show and reports them to the congestion controller. It
// returns how many it found. ackTime is when the peer sent the ACK as far
// as it tells: receipt minus the (capped) ack delay.
func (r *Recovery) detectSpurious(ranges []wire.AckRange, ackTime, now time.Time) int {
	h := &r.reorder.lost
	h.expire(now.Add(-lostHistoryPTOs * (r.rtt.PTOBase() + r.rtt.MaxAckDelay())))
	if h.n == 0 || ranges[0].Largest < h.at(0).number || ranges[len(ranges)-1].Smallest > h.at(h.n-1).number {
		return 0
	}
	largest := ranges[0].Largest
	base := r.lossDelayBase()
	found := 0
	ri := len(ranges) - 1 // ranges from the smallest up, records likewise
	for i := 0; i < h.n && ri >= 0; i++ {
		rec := h.at(i)
		for ri >= 0 && ranges[ri].Largest < rec.number {
			ri--
		}
		if ri < 0 || rec.gone || rec.number < ranges[ri].Smallest {
			continue
		}
		rec.gone = true
		found++
		r.reorder.spurious++
		r.adaptThresholds(largest-rec.number, ackTime.Sub(rec.timeSent), base)
		if r.cc.OnSpuriousLoss(now, rec.timeSent, int(rec.size)) {
			r.reorder.undos++
		}
	}
	h.expire(time.Time{}) // pop acknowledged records at the front
	return found
}

// adaptThresholds raises the thresholds so that a packet reordered by
// distance packet numbers and acknowledged delay after it was sent would
// not have been declared lost.
func (r *Recovery) adaptThresholds(distance uint64, delay, base time.Duration) {
	o := &r.reorder
	if distance >= o.packetThreshold {
		o.packetThreshold = min(distance+1, maxPacketThreshold)
	}
	if base <= 0 || delay <= 0 {
		return
	}
	// The smallest multiplier, in eighths, whose loss delay exceeds delay.
	need := int64(delay*8/base) + 1
	if need > o.timeEighths {
		o.timeEighths = min(need, maxTimeThresholdEighths)
	}
}
