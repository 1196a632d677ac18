package recovery

import (
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// OnAckReceived processes an ACK frame received in space (RFC 9002
// appendix A.7). ranges are the frame's ranges, largest first; ackDelay is
// the decoded ACK Delay field. Newly acknowledged packets are appended to
// ev.Acked and packets this ACK reveals as lost to ev.Lost; the congestion
// controller has been told about both when it returns. Acknowledgments of
// packets already acked are ignored; one of a packet recently declared lost
// proves the loss spurious (reordering.go).
//
// An error leaves the state unchanged; TransportErrorCode maps it to the
// code to close the connection with.
func (r *Recovery) OnAckReceived(space protocol.PacketNumberSpace, ranges []wire.AckRange, ackDelay time.Duration, now time.Time, ev *Events) error {
	if !space.Valid() {
		return ErrInvalidSpace
	}
	s := &r.spaces[space]
	if s.discarded {
		return ErrSpaceDiscarded
	}
	if err := validateRanges(&s.sent, ranges); err != nil {
		return err
	}
	if ev == nil {
		r.scratch.Reset()
		ev = &r.scratch
	}

	largest := ranges[0].Largest
	if !s.hasLargestAcked || largest > s.largestAcked {
		s.largestAcked = largest
		s.hasLargestAcked = true
	}

	priorInFlight := r.bytesInFlight
	firstAcked := len(ev.Acked)
	largestNewlyAcked := false
	includesAckEliciting := false
	var largestSentTime time.Time
	for _, rg := range ranges {
		for i := s.sent.search(rg.Smallest); i < s.sent.len(); i++ {
			p := s.sent.at(i)
			if p.Number > rg.Largest {
				break
			}
			if p.state != stateOutstanding {
				continue
			}
			p.state = stateAcked
			r.removeFromFlight(s, p)
			if p.Number == largest {
				largestNewlyAcked = true
				largestSentTime = p.TimeSent
			}
			includesAckEliciting = includesAckEliciting || p.AckEliciting
			ev.Acked = append(ev.Acked, *p)
		}
	}
	spurious := 0
	if space == protocol.SpaceAppData {
		// Before loss detection: the thresholds it uses may rise, and an
		// undone reduction lets this ACK's real losses count afresh.
		ackTime := now.Add(-min(max(ackDelay, 0), r.rtt.MaxAckDelay()))
		spurious = r.detectSpurious(ranges, ackTime, now)
	}
	if len(ev.Acked) == firstAcked {
		if spurious > 0 {
			// Higher thresholds move the loss time later.
			r.detectAndReportLosses(space, now, ev)
			s.sent.popResolved()
			r.setTimer(now)
		}
		return nil
	}

	if largestNewlyAcked && includesAckEliciting && !largestSentTime.Before(r.sampledSent) {
		if space == protocol.SpaceInitial {
			// Initial ACKs are never delayed on purpose (RFC 9002 5.3).
			ackDelay = 0
		}
		r.rtt.Update(now.Sub(largestSentTime), ackDelay, r.handshakeConfirmed, now)
		r.sampledSent = largestSentTime
	}
	if space == protocol.SpaceHandshake && !r.isServer {
		r.handshakeAckReceived = true
	}
	// ECN: when the frame carries ECN counts, validate them here and report
	// an increase of ECN-CE to r.cc.OnCongestionEvent with the send time of
	// the largest newly acked packet (RFC 9002 section 7.1). Not done yet.

	r.detectAndReportLosses(space, now, ev)
	for i := firstAcked; i < len(ev.Acked); i++ {
		if p := &ev.Acked[i]; p.InFlight {
			r.cc.OnPacketAcked(now, p.TimeSent, p.Size, priorInFlight)
		}
	}
	if r.peerCompletedAddressValidation() {
		r.ptoCount = 0
	}
	s.sent.popResolved()
	r.setTimer(now)
	return nil
}

// validateRanges checks ranges before anything changes, so that a bad
// frame leaves no trace.
func validateRanges(q *sentQueue, ranges []wire.AckRange) error {
	if len(ranges) == 0 {
		return ErrInvalidAckRanges
	}
	for i, rg := range ranges {
		if rg.Smallest > rg.Largest || (i > 0 && rg.Largest >= ranges[i-1].Smallest) {
			return ErrInvalidAckRanges
		}
	}
	for _, rg := range ranges {
		if q.acksUnsent(rg) {
			return ErrUnsentPacketAcked
		}
	}
	return nil
}
