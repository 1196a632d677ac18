package flowcontrol

import "time"

// ConnReceiver is connection-level receive flow control: the sum of the
// highest offsets received on all streams against MAX_DATA. Streams feed it
// through their StreamReceiver; the connection only asks when to send
// MAX_DATA.
type ConnReceiver struct {
	w recvWindow
	// holdGrowth keeps the connection's and its streams' windows at
	// their current sizes (HoldGrowth).
	holdGrowth bool
}

// NewConnReceiver returns a ConnReceiver advertising cfg.Initial.
func NewConnReceiver(cfg WindowConfig) *ConnReceiver {
	c := new(ConnReceiver)
	c.Init(cfg)
	return c
}

// Init (re)initializes c, for embedding.
func (c *ConnReceiver) Init(cfg WindowConfig) { c.w.init(cfg) }

// Limit returns the MAX_DATA value currently advertised; a lost MAX_DATA
// frame is resent with this value.
func (c *ConnReceiver) Limit() uint64 { return c.w.limit }

// Highest returns the bytes of connection credit the peer has used.
func (c *ConnReceiver) Highest() uint64 { return c.w.highest }

// Consumed returns the bytes the application has read or we discarded.
func (c *ConnReceiver) Consumed() uint64 { return c.w.consumed }

// Window returns the current window size.
func (c *ConnReceiver) Window() uint64 { return c.w.window }

// HoldGrowth stops (hold) or resumes auto-tuning of the connection's
// window and of its streams' windows: while held, updates give back the
// credit of consumed data at the current window sizes, so the memory the
// peer may fill does not grow. The connection holds growth while a
// process-wide receive memory budget is exhausted.
func (c *ConnReceiver) HoldGrowth(hold bool) { c.holdGrowth = hold }

// NeedsUpdate reports whether a MAX_DATA frame should be sent.
func (c *ConnReceiver) NeedsUpdate() bool { return c.w.needsUpdate() }

// MaybeUpdate returns the new MAX_DATA value and true when an update is due,
// auto-tuning the window first (now and the smoothed RTT drive the tuning).
// The new limit counts as advertised once returned.
func (c *ConnReceiver) MaybeUpdate(now time.Time, srtt time.Duration) (uint64, bool) {
	if !c.w.needsUpdate() {
		return c.w.limit, false
	}
	c.w.autoTune(now, srtt, c.holdGrowth)
	c.w.limit = c.w.nextLimit()
	return c.w.limit, true
}

// reserve checks that delta more bytes fit under MAX_DATA without taking them.
func (c *ConnReceiver) reserve(delta uint64) error {
	if delta > c.w.limit-c.w.highest {
		return newError(FlowControlError, "connection data %d beyond MAX_DATA %d", c.w.highest+delta, c.w.limit)
	}
	return nil
}
