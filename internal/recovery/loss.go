package recovery

import (
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
)

// detectAndReportLosses declares lost the packets of space that the packet
// or time threshold condemns, appends them to ev.Lost, and tells the
// congestion controller, including about persistent congestion.
func (r *Recovery) detectAndReportLosses(space protocol.PacketNumberSpace, now time.Time, ev *Events) {
	lostBytes, largestLostSent, persistent := r.detectLosses(space, now, ev)
	if lostBytes > 0 {
		r.cc.OnPacketsLost(now, largestLostSent, lostBytes)
	}
	if persistent {
		r.cc.OnPersistentCongestion(now)
	}
}

// detectLosses is DetectAndRemoveLostPackets of RFC 9002 appendix A.10,
// with the space's thresholds (reordering.go). It also sets the space's
// loss time for packets that are not lost yet but will be once the time
// threshold passes.
//
// Persistent congestion (RFC 9002 section 7.6.2) is judged within this
// space and among the packets lost in this pass: two ack-eliciting packets
// sent after the first RTT sample, further apart than the persistent
// congestion duration, with no acknowledged packet between them. The RFC
// allows the single-space simplification.
func (r *Recovery) detectLosses(space protocol.PacketNumberSpace, now time.Time, ev *Events) (lostBytes int, largestLostSent time.Time, persistent bool) {
	s := &r.spaces[space]
	s.lossTime = time.Time{}
	if !s.hasLargestAcked {
		return 0, time.Time{}, false
	}
	packetThreshold, lossDelay := r.thresholds(space)
	lostSendTime := now.Add(-lossDelay)
	pcDuration := r.rtt.PersistentCongestionDuration()
	firstSample := r.rtt.FirstSampleTime()
	hasSample := r.rtt.HasSample()

	var runStart time.Time // first lost packet of the current run
	inRun := false
	for i := 0; i < s.sent.len(); i++ {
		p := s.sent.at(i)
		if p.Number > s.largestAcked {
			break
		}
		switch p.state {
		case stateAcked:
			inRun = false
			continue
		case stateLost:
			continue
		}
		if p.TimeSent.After(lostSendTime) && s.largestAcked < p.Number+packetThreshold {
			if t := p.TimeSent.Add(lossDelay); s.lossTime.IsZero() || t.Before(s.lossTime) {
				s.lossTime = t
			}
			continue
		}
		p.state = stateLost
		r.removeFromFlight(s, p)
		if ev != nil {
			ev.Lost = append(ev.Lost, *p)
		}
		if p.InFlight && !p.MTUProbe {
			lostBytes += p.Size
			if p.TimeSent.After(largestLostSent) {
				largestLostSent = p.TimeSent
			}
			if space == protocol.SpaceAppData {
				r.recordLost(p)
			}
		}
		if p.AckEliciting && !p.MTUProbe && hasSample && p.TimeSent.After(firstSample) {
			if !inRun {
				inRun = true
				runStart = p.TimeSent
			}
			if p.TimeSent.Sub(runStart) > pcDuration {
				persistent = true
			}
		}
	}
	return lostBytes, largestLostSent, persistent
}
