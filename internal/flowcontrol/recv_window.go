package flowcontrol

import "time"

// autoTuneRTTs is how many smoothed RTTs the application may take to drain a
// full window for the window to grow (quic-go's rule, scaled to the part of
// the window drained in the epoch). A sender limited by our window delivers
// at most one window per RTT, so draining it this fast means the window, not
// the application, limits throughput.
const autoTuneRTTs = 4

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

// needsUpdate reports whether a quarter of the window has been consumed
// since the last update, that is at most three quarters are left (quic-go's
// threshold): the peer never runs dry while one RTT of updates is in
// flight, and smaller updates would cost more frames than they are worth.
func (w *recvWindow) needsUpdate() bool {
	next := w.nextLimit()
	return next > w.limit && 4*(w.limit-w.consumed) <= 3*w.window
}

// autoTune doubles the window (up to maxWindow) when more than half a
// window was consumed in the epoch and at a pace that drains a full window
// within autoTuneRTTs smoothed RTTs, unless hold is set (a memory budget is
// exhausted). It reports growth. The epoch starts with the first data
// received (noteArrival), else at the first update.
func (w *recvWindow) autoTune(now time.Time, srtt time.Duration, hold bool) bool {
	if !w.epochStarted {
		w.startEpoch(now)
		return false
	}
	read := w.consumed - w.epochConsumed
	if read <= w.window/2 || srtt <= 0 {
		return false // the epoch goes on
	}
	elapsed := now.Sub(w.epochStart)
	grow := !hold && w.window < w.maxWindow &&
		float64(elapsed) < autoTuneRTTs*float64(srtt)*float64(read)/float64(w.window)
	if grow {
		w.window = min(w.window*2, w.maxWindow)
	}
	w.startEpoch(now)
	return grow
}

// noteArrival starts the first epoch when the first data arrives.
func (w *recvWindow) noteArrival(now time.Time) {
	if !w.epochStarted {
		w.startEpoch(now)
	}
}

func (w *recvWindow) startEpoch(now time.Time) {
	w.epochStarted = true
	w.epochStart = now
	w.epochConsumed = w.consumed
}
