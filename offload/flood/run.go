package flood

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Source yields the packets of a flood: Generator (UDP payloads) and
// FrameSource (Ethernet frames) implement it. Next may build into buf[:0]
// or return shared storage; either way the result stays valid until the
// next call on the same buf.
type Source interface {
	Next(buf []byte) ([]byte, error)
}

// RunConfig bounds and paces a flood. Count and Duration are both
// required: Run refuses to start an unbounded flood.
type RunConfig struct {
	// Count is the number of packets to attempt.
	Count uint64
	// Duration is the longest the run may last.
	Duration time.Duration
	// Rate is the target in packets per second; 0 sends as fast as possible.
	Rate float64
	// Batch is the number of packets per Send (0: DefaultBatch).
	Batch int
}

// Stats summarizes a run.
type Stats struct {
	// Sent counts packets the sender accepted; Errors those it refused.
	Sent   uint64 `json:"sent"`
	Errors uint64 `json:"errors"`
	// FirstError is the first send error, if any.
	FirstError string `json:"first_error,omitempty"`
	// Elapsed is the run's wall time and PPS the achieved rate of Sent.
	Elapsed time.Duration `json:"-"`
	PPS     float64       `json:"pps"`
	// Stopped tells why the run ended: "count", "duration" or "cancelled".
	Stopped string `json:"stopped"`
}

// Check validates a RunConfig, returning ErrUnbounded for a missing bound.
func (c *RunConfig) Check() error {
	if c.Count == 0 || c.Duration <= 0 {
		return ErrUnbounded
	}
	if math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 {
		return fmt.Errorf("flood: rate %v must be a finite number of packets per second, 0 for unlimited", c.Rate)
	}
	if c.Batch < 0 {
		return fmt.Errorf("flood: batch %d is negative", c.Batch)
	}
	return nil
}

// Run sends packets from src through s until cfg.Count packets were
// attempted, cfg.Duration passed, or ctx is done. A packet the sender
// refuses is counted in Errors and skipped. The error is non-nil only for
// a bad config or a failing source; send errors are in Stats.
func Run(ctx context.Context, cfg RunConfig, src Source, s Sender) (Stats, error) {
	var st Stats
	if err := cfg.Check(); err != nil {
		return st, err
	}
	batch := cfg.Batch
	if batch == 0 {
		batch = DefaultBatch
	}
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	// A blocked send gives up at the deadline, so the run always ends.
	if err := s.SetDeadline(deadline); err != nil {
		return st, fmt.Errorf("flood: setting send deadline: %w", err)
	}
	var bucket *TokenBucket
	if cfg.Rate > 0 {
		bucket = NewTokenBucket(cfg.Rate, burstFor(cfg.Rate, batch), start)
	}
	bufs := make([][]byte, batch)
	for i := range bufs {
		bufs[i] = make([]byte, 0, FrameLen)
	}
	pkts := make([][]byte, batch)
	var attempted uint64
	st.Stopped = "count"
	for attempted < cfg.Count {
		if ctx.Err() != nil {
			st.Stopped = "cancelled"
			break
		}
		now := time.Now()
		if !now.Before(deadline) {
			st.Stopped = "duration"
			break
		}
		n := int(min(uint64(batch), cfg.Count-attempted))
		if bucket != nil {
			granted, wait := bucket.Take(now, n)
			if granted == 0 {
				sleep(ctx, min(wait, deadline.Sub(now)))
				continue
			}
			n = granted
		}
		for i := range n {
			p, err := src.Next(bufs[i][:0])
			if err != nil {
				st.finish(time.Since(start))
				return st, err
			}
			pkts[i] = p
		}
		st.send(s, pkts[:n])
		attempted += uint64(n)
	}
	clear(pkts)
	st.finish(time.Since(start))
	return st, nil
}

// send hands pkts to s, skipping each packet it refuses.
func (st *Stats) send(s Sender, pkts [][]byte) {
	for len(pkts) > 0 {
		k, err := s.Send(pkts)
		k = min(max(k, 0), len(pkts))
		st.Sent += uint64(k)
		pkts = pkts[k:]
		if err == nil {
			if k == 0 {
				// A sender that neither sends nor fails would loop forever.
				st.Errors += uint64(len(pkts))
				st.note(fmt.Errorf("flood: sender accepted nothing"))
				return
			}
			continue
		}
		st.note(err)
		if len(pkts) > 0 {
			st.Errors++
			pkts = pkts[1:]
		}
	}
}

func (st *Stats) note(err error) {
	if st.FirstError == "" {
		st.FirstError = err.Error()
	}
}

func (st *Stats) finish(elapsed time.Duration) {
	st.Elapsed = elapsed
	if elapsed > 0 {
		st.PPS = float64(st.Sent) / elapsed.Seconds()
	}
}
