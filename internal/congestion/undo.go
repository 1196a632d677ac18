package congestion

import "time"

// lossUndo decides when the latest loss-triggered window reduction turned
// out to be spurious, in the spirit of TCP's Eifel response (RFC 4015) and
// F-RTO (RFC 5682): the loss detector reports every packet it declared
// lost that was acknowledged after all, and once every byte of loss counted
// toward the reduction has been reported so, the reduction is reverted.
//
// Only the latest reduction can be undone; a new one replaces it. ECN-CE
// and persistent congestion disarm it: they prove real congestion.
//
// Losses are attributed by send time, as the recovery period keys events:
// a loss counts toward the reduction when its packet was sent after the
// previous recovery period started and no later than the current one did.
// A loss pass is reported as one sum, so a pass mixing packets from both
// sides of the previous start counts bytes that no spurious report can
// cancel; that only errs on the side of keeping the reduction.
type lossUndo struct {
	armed bool
	// prior is the recovery period the reduction replaced; restoring it
	// makes later losses of packets sent since then count as new events.
	prior recoveryPeriod
	// reducedAt is when the reduction happened.
	reducedAt time.Time
	// pending counts the bytes of loss attributed to the reduction that
	// have not been reported spurious yet.
	pending int
}

// begin arms the undo for a reduction that replaced prior, caused by a
// loss pass of lostBytes.
func (u *lossUndo) begin(prior recoveryPeriod, now time.Time, lostBytes int) {
	*u = lossUndo{armed: true, prior: prior, reducedAt: now, pending: lostBytes}
}

// addLoss counts a loss pass that the current recovery period absorbed.
func (u *lossUndo) addLoss(largestSentTime time.Time, lostBytes int) {
	if !u.armed || u.prior.covers(largestSentTime) {
		return // belongs to an older reduction, which can no longer be undone
	}
	u.pending += lostBytes
}

// spurious takes a report that a loss of bytes, for a packet sent at
// sentTime, was spurious. It returns true when that was the last counted
// loss of the reduction, which the caller then reverts; the undo is spent.
func (u *lossUndo) spurious(cur recoveryPeriod, sentTime time.Time, bytes int) bool {
	if !u.armed || !cur.covers(sentTime) || u.prior.covers(sentTime) {
		return false // not counted toward this reduction
	}
	u.pending -= bytes
	if u.pending > 0 {
		return false
	}
	u.armed = false
	return true
}

func (u *lossUndo) disarm() { u.armed = false }
