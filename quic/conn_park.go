package quic

import (
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/recovery"
)

// parkAfter is how long a connection's goroutine waits with nothing to
// do before it exits. Short enough that an idle connection (a keep-alive
// HTTP/3 client between requests) holds no goroutine stack, long enough
// that a transfer's pacing, ACK and loss timers never restart it.
const parkAfter = 250 * time.Millisecond

// parkState says whether the connection's goroutine (Conn.run) is parked:
// exited while idle, to be started again by the next wake. Exactly one
// goroutine runs the loop at a time: the one that parks hands over by
// storing parked, and a goroutine is started only by the wake that takes
// parked back (the compare-and-swap orders the two, so the new goroutine
// sees all the old one wrote). Its fields are its own; the loop's state
// stays under Conn.mu as before.
type parkState struct {
	parked atomic.Bool
	// timer (time.AfterFunc, created at the first park) wakes a parked
	// connection at its next deadline. Only the goroutine running the loop
	// resets or stops it.
	timer *time.Timer
}

// wake asks the connection goroutine to look for work, starting it again
// if it is parked. The token goes into wakeCh before parked is read, and
// park stores parked before it looks for a token, so either the parking
// goroutine sees the token and stays, or this call sees parked and starts
// a new one: no wake is lost.
func (c *Conn) wake() {
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
	if c.parking.parked.CompareAndSwap(true, false) {
		go c.run()
	}
}

// park is called by the loop when it had nothing to do for parkAfter; the
// next timer is due at deadline (zero: none). It reports whether the
// calling goroutine is to exit: false when a wake came in meanwhile, and
// the loop goes on.
func (c *Conn) park(deadline time.Time) bool {
	c.releaseIdle()
	if !deadline.IsZero() {
		// Armed before parked is stored: its wake then always finds
		// either this goroutine or parked.
		wait := max(time.Until(deadline), 0)
		if c.parking.timer == nil {
			c.parking.timer = time.AfterFunc(wait, c.wake)
		} else {
			c.parking.timer.Reset(wait)
		}
	}
	c.parking.parked.Store(true)
	select {
	case <-c.wakeCh:
	case <-c.t.closedCh:
		// Transport.Close wakes every connection after closing closedCh;
		// seeing it here saves the restart.
	default:
		return true
	}
	if c.parking.parked.CompareAndSwap(true, false) {
		c.parking.unpark()
		c.wake() // the token taken above: the loop's select handles it
		return false
	}
	// A wake started a new goroutine, which needs the token taken above
	// to take the inbox: give it back.
	c.wake()
	return true
}

// unpark is called by the goroutine that runs the loop after a park: the
// park timer's wake is not needed while it runs (a stale one would cost a
// turn, nothing more).
func (p *parkState) unpark() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// releaseIdle gives back the scratch memory a parking connection can make
// again when it wakes: the receive queue's and send queue's slices, the
// frame being parsed, the sent-packet records kept for reuse (up to 1024
// after a transfer), the acknowledged and lost packets' scratch lists, the
// sent-packet rings and stream lists with nothing in them.
func (c *Conn) releaseIdle() {
	c.inbox.release()
	c.send.spare = nil // run's alone (Locking)
	c.mu.Lock()
	c.frame = nil
	clear(c.loss.freeSent)
	c.loss.freeSent = nil
	c.loss.sent.releaseIfEmpty()
	c.loss.rec.ReleaseIdle()
	c.loss.events = recovery.Events{}
	c.streams.releaseIdle()
	c.mu.Unlock()
}
