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
	// askGrowth makes growth a request that waits for approval
	// (AskBeforeGrowth); wantWindow is the largest window requested and
	// not yet taken by TakeGrowthRequest (0: none).
	askGrowth  bool
	wantWindow uint64
}

// AskBeforeGrowth makes every growth of the connection's window, by its own
// auto-tuning or to stay ahead of a stream's, a request instead: the window
// keeps its size until the owner takes the request (TakeGrowthRequest),
// asks whoever approves growth, and applies the answer (Grow). The owner can
// so ask a user callback without holding its lock.
func (c *ConnReceiver) AskBeforeGrowth() { c.askGrowth = true }

// TakeGrowthRequest returns by how many bytes the window was asked to grow
// since the last call, and clears the request. While growth is held
// (HoldGrowth) there is none: an approval would have nothing to grow.
func (c *ConnReceiver) TakeGrowthRequest() (delta uint64, ok bool) {
	want := c.wantWindow
	c.wantWindow = 0
	if want <= c.w.window || c.holdGrowth {
		return 0, false
	}
	return want - c.w.window, true
}

// Grow raises the window by delta bytes (up to its maximum): a growth
// request was approved. The next update advertises it.
func (c *ConnReceiver) Grow(delta uint64) {
	c.w.window = min(c.w.window+min(delta, c.w.maxWindow), c.w.maxWindow)
}

// grow raises the connection window to n, or requests it (AskBeforeGrowth).
func (c *ConnReceiver) grow(n uint64) {
	n = min(n, c.w.maxWindow)
	if n <= c.w.window {
		return
	}
	if c.askGrowth {
		c.wantWindow = max(c.wantWindow, n)
		return
	}
	c.w.window = n
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
	old := c.w.window
	if c.w.autoTune(now, srtt, c.holdGrowth) && c.askGrowth {
		grown := c.w.window
		c.w.window = old
		c.grow(grown)
	}
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
