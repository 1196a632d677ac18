package flowcontrol

import "time"

// autoTuneRTTs is how many smoothed RTTs the application may take to drain a
// full window for the window to grow. A sender limited by our window delivers
// at most one window per RTT, so draining it this fast means the window, not
// the application, limits throughput.
const autoTuneRTTs = 2

// WindowConfig sizes a receive window.
type WindowConfig struct {
	// Initial is the window advertised at the start (the initial_max_data or
	// initial_max_stream_data_* transport parameter).
	Initial uint64
	// Max is how far auto-tuning may grow the window; values below Initial
	// disable growth.
	Max uint64
}

// recvWindow is the receive-side state shared by streams and connections:
// offsets are absolute, the window slides with what the application consumed.
type recvWindow struct {
	limit    uint64 // largest offset the peer may send up to (advertised)
	highest  uint64 // highest offset received
	consumed uint64 // bytes the application has read (or we discarded)

	window    uint64
	maxWindow uint64

	// The auto-tuning epoch starts at a window update and ends once a full
	// window has been consumed.
	epochStarted  bool
	epochStart    time.Time
	epochConsumed uint64
}

func (w *recvWindow) init(cfg WindowConfig) {
	initial := min(cfg.Initial, MaxOffset)
	*w = recvWindow{limit: initial, window: initial, maxWindow: min(max(cfg.Max, initial), MaxOffset)}
}

func (w *recvWindow) consume(n uint64) error {
	if n > w.highest-w.consumed {
		return ErrConsumeTooMuch
	}
	w.consumed += n
	return nil
}

// nextLimit is the limit an update would advertise now.
func (w *recvWindow) nextLimit() uint64 {
	return min(w.consumed+w.window, MaxOffset)
}

// needsUpdate reports whether the remaining window fell below half, that is
// an update would grant at least half a window more: smaller updates would
// cost more frames than they are worth.
func (w *recvWindow) needsUpdate() bool {
	next := w.nextLimit()
	return next > w.limit && next-w.limit >= max(w.window/2, 1)
}

// autoTune doubles the window (up to maxWindow) when the last full window
// was consumed within autoTuneRTTs smoothed RTTs, unless hold is set (a
// memory budget is exhausted). It reports growth.
func (w *recvWindow) autoTune(now time.Time, srtt time.Duration, hold bool) bool {
	if !w.epochStarted {
		w.startEpoch(now)
		return false
	}
	if w.consumed-w.epochConsumed < w.window {
		return false // the epoch goes on until a full window is consumed
	}
	elapsed := now.Sub(w.epochStart)
	grow := !hold && srtt > 0 && elapsed < autoTuneRTTs*srtt && w.window < w.maxWindow
	if grow {
		w.window = min(w.window*2, w.maxWindow)
	}
	w.startEpoch(now)
	return grow
}

func (w *recvWindow) startEpoch(now time.Time) {
	w.epochStarted = true
	w.epochStart = now
	w.epochConsumed = w.consumed
}

// atLeast raises the window to n, within maxWindow.
func (w *recvWindow) atLeast(n uint64) {
	if w.window < n {
		w.window = min(n, w.maxWindow)
	}
}
