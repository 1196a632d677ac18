package flowcontrol

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newPair(stream, conn WindowConfig) (*StreamReceiver, *ConnReceiver) {
	c := NewConnReceiver(conn)
	return NewStreamReceiver(4, c, stream), c
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStreamFlowControlError(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 100}, WindowConfig{Initial: 1000})
	mustNil(t, s.OnStreamFrame(0, 100, false))
	err := s.OnStreamFrame(100, 1, false)
	if code(err) != FlowControlError {
		t.Fatalf("byte 101 with MAX_STREAM_DATA 100: err = %v", err)
	}
	if s.Highest() != 100 || c.Highest() != 100 {
		t.Fatal("a rejected frame changed the state")
	}
	// Retransmissions below the limit stay fine and take no more credit.
	mustNil(t, s.OnStreamFrame(50, 50, false))
	if c.Highest() != 100 {
		t.Fatalf("retransmission charged the connection: %d", c.Highest())
	}
}

func TestConnectionFlowControlError(t *testing.T) {
	c := NewConnReceiver(WindowConfig{Initial: 150})
	a := NewStreamReceiver(0, c, WindowConfig{Initial: 100})
	b := NewStreamReceiver(4, c, WindowConfig{Initial: 100})
	mustNil(t, a.OnStreamFrame(0, 100, false))
	mustNil(t, b.OnStreamFrame(0, 50, false))
	err := b.OnStreamFrame(50, 1, false)
	if code(err) != FlowControlError {
		t.Fatalf("connection total 151 with MAX_DATA 150: err = %v", err)
	}
	if b.Highest() != 50 || c.Highest() != 150 {
		t.Fatal("a rejected frame changed the state")
	}
	// A reset whose final size overflows the connection is caught too.
	if err := b.OnResetStream(60); code(err) != FlowControlError {
		t.Fatalf("reset beyond MAX_DATA: err = %v", err)
	}
}

func TestOffsetBeyondVarint(t *testing.T) {
	s, _ := newPair(WindowConfig{Initial: MaxOffset}, WindowConfig{Initial: MaxOffset})
	for _, f := range [][2]uint64{{MaxOffset, 1}, {MaxOffset + 1, 0}, {1, MaxOffset}, {1 << 63, 1 << 63}} {
		if err := s.OnStreamFrame(f[0], f[1], false); code(err) != FlowControlError {
			t.Errorf("offset %d length %d: err = %v", f[0], f[1], err)
		}
	}
	if err := s.OnResetStream(MaxOffset + 1); code(err) != FlowControlError {
		t.Errorf("reset final size 2^62: err = %v", err)
	}
	mustNil(t, s.OnStreamFrame(MaxOffset-10, 10, true))
}

func TestFinalSizeErrors(t *testing.T) {
	big := WindowConfig{Initial: 1 << 20}
	cases := []struct {
		name string
		run  func(s *StreamReceiver) error
	}{
		{"FIN changes final size", func(s *StreamReceiver) error {
			mustNil(t, s.OnStreamFrame(0, 10, true))
			return s.OnStreamFrame(0, 12, true)
		}},
		{"FIN with smaller final size", func(s *StreamReceiver) error {
			mustNil(t, s.OnStreamFrame(0, 10, true))
			return s.OnStreamFrame(0, 8, true)
		}},
		{"data beyond final size", func(s *StreamReceiver) error {
			mustNil(t, s.OnStreamFrame(0, 10, true))
			return s.OnStreamFrame(10, 1, false)
		}},
		{"FIN below data received", func(s *StreamReceiver) error {
			mustNil(t, s.OnStreamFrame(0, 10, false))
			return s.OnStreamFrame(0, 5, true)
		}},
		{"reset changes final size", func(s *StreamReceiver) error {
			mustNil(t, s.OnStreamFrame(0, 10, true))
			return s.OnResetStream(11)
		}},
		{"reset below data received", func(s *StreamReceiver) error {
			mustNil(t, s.OnStreamFrame(0, 10, false))
			return s.OnResetStream(9)
		}},
		{"two resets disagree", func(s *StreamReceiver) error {
			mustNil(t, s.OnResetStream(20))
			return s.OnResetStream(21)
		}},
		{"data beyond reset final size", func(s *StreamReceiver) error {
			mustNil(t, s.OnResetStream(20))
			return s.OnStreamFrame(15, 6, false)
		}},
	}
	for _, c := range cases {
		s, _ := newPair(big, big)
		if err := c.run(s); code(err) != FinalSizeError || !errors.Is(err, ErrFinalSize) {
			t.Errorf("%s: err = %v, want FINAL_SIZE_ERROR", c.name, err)
		}
	}
	// The consistent cases are accepted.
	s, _ := newPair(big, big)
	mustNil(t, s.OnStreamFrame(5, 5, true))
	mustNil(t, s.OnStreamFrame(0, 5, false)) // fills in below the final size
	mustNil(t, s.OnStreamFrame(0, 10, true)) // FIN repeated, same size
	mustNil(t, s.OnResetStream(10))          // reset with the same size
	mustNil(t, s.OnResetStream(10))          // and again
	if fs, ok := s.FinalSize(); !ok || fs != 10 {
		t.Fatalf("FinalSize = %d, %v", fs, ok)
	}
}

func TestResetReleasesConnectionCredit(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 1000}, WindowConfig{Initial: 1000})
	mustNil(t, s.OnStreamFrame(0, 100, false))
	mustNil(t, s.Consume(40))
	// The final size counts in full against the connection (RFC 9000 4.5),
	// and all of it is released since nobody will read it.
	mustNil(t, s.OnResetStream(600))
	if c.Highest() != 600 || c.Consumed() != 600 || s.Consumed() != 600 {
		t.Fatalf("after reset: conn highest %d consumed %d, stream consumed %d", c.Highest(), c.Consumed(), s.Consumed())
	}
	if s.NeedsUpdate() {
		t.Fatal("MAX_STREAM_DATA wanted for a reset stream")
	}
	if !c.NeedsUpdate() {
		t.Fatal("released credit should allow a MAX_DATA update")
	}
}

func TestAbandonReleasesLateData(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 1000}, WindowConfig{Initial: 1000})
	mustNil(t, s.OnStreamFrame(0, 100, false))
	s.Abandon()
	if c.Consumed() != 100 {
		t.Fatalf("conn consumed %d after abandon, want 100", c.Consumed())
	}
	mustNil(t, s.OnStreamFrame(100, 50, false))
	if c.Consumed() != 150 || c.Highest() != 150 {
		t.Fatalf("late data not released: consumed %d highest %d", c.Consumed(), c.Highest())
	}
	if err := s.Consume(1); !errors.Is(err, ErrConsumeTooMuch) {
		t.Fatalf("Consume after abandon: %v", err)
	}
}

func TestConsumeTooMuch(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 100}, WindowConfig{Initial: 100})
	mustNil(t, s.OnStreamFrame(0, 10, false))
	if err := s.Consume(11); !errors.Is(err, ErrConsumeTooMuch) {
		t.Fatalf("err = %v", err)
	}
	if s.Consumed() != 0 || c.Consumed() != 0 {
		t.Fatal("failed Consume changed the state")
	}
}

func TestUpdateThreshold(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 1000}, WindowConfig{Initial: 4000})
	mustNil(t, s.OnStreamFrame(0, 1000, false))
	mustNil(t, s.Consume(249))
	if s.NeedsUpdate() {
		t.Fatal("update with 751 of 1000 bytes of window left")
	}
	if _, ok := s.MaybeUpdate(t0, 0); ok {
		t.Fatal("MaybeUpdate sent an early update")
	}
	mustNil(t, s.Consume(1))
	if !s.NeedsUpdate() {
		t.Fatal("no update with three quarters of the window left")
	}
	limit, ok := s.MaybeUpdate(t0, 0)
	if !ok || limit != 1250 || s.Limit() != 1250 {
		t.Fatalf("MaybeUpdate = %d, %v; want 1250 (consumed + window)", limit, ok)
	}
	if s.NeedsUpdate() {
		t.Fatal("update still wanted right after one was sent")
	}
	// Connection: 4000 window, 999 consumed: no MAX_DATA yet.
	mustNil(t, s.OnStreamFrame(1000, 250, false))
	mustNil(t, s.Consume(749))
	cl, ok := c.MaybeUpdate(t0, 0)
	if ok || cl != 4000 {
		t.Fatalf("MAX_DATA %d, %v with 999 consumed of 4000", cl, ok)
	}
	s2 := NewStreamReceiver(8, c, WindowConfig{Initial: 1000})
	mustNil(t, s2.OnStreamFrame(0, 500, false))
	mustNil(t, s2.Consume(1))
	if cl, ok = c.MaybeUpdate(t0, 0); !ok || cl != 5000 {
		t.Fatalf("MAX_DATA = %d, %v; want 5000 after 1000 consumed", cl, ok)
	}
	mustNil(t, s2.Consume(499))
	// After a FIN no more MAX_STREAM_DATA is needed.
	mustNil(t, s2.OnStreamFrame(500, 0, true))
	if s2.NeedsUpdate() {
		t.Fatal("MAX_STREAM_DATA wanted after the final size is known")
	}
}

// drain simulates a sender that always fills the window and an application
// that reads step bytes every interval, sending updates as they fall due.
func drain(t *testing.T, s *StreamReceiver, step uint64, interval, srtt time.Duration, rounds int) {
	t.Helper()
	now := t0
	for i := 0; i < rounds; i++ {
		if fill := min(s.Limit()-s.Highest(), s.conn.Limit()-s.conn.Highest()); fill > 0 {
			mustNil(t, s.OnStreamFrame(s.Highest(), fill, false))
		}
		now = now.Add(interval)
		mustNil(t, s.Consume(min(step, s.Highest()-s.Consumed())))
		if limit, ok := s.MaybeUpdate(now, srtt); ok && limit != s.Consumed()+s.Window() {
			t.Fatalf("limit %d != consumed %d + window %d", limit, s.Consumed(), s.Window())
		}
		s.conn.MaybeUpdate(now, srtt)
	}
}

func TestAutoTuneGrowsWhenFast(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 1000, Max: 8000}, WindowConfig{Initial: 1000, Max: 1 << 20})
	// Half a window read every 50 ms with a 100 ms RTT: a full window is
	// drained in 100 ms, under 4 RTTs, so the window must grow.
	drain(t, s, 500, 50*time.Millisecond, 100*time.Millisecond, 3)
	if s.Window() != 2000 {
		t.Fatalf("window %d after draining 1000 bytes in one RTT, want 2000", s.Window())
	}
	if c.Window() < 3000 {
		t.Fatalf("connection window %d, want >= 1.5 x 2000", c.Window())
	}
	// Keep reading fast: the window doubles up to the configured maximum.
	for i := 0; i < 20; i++ {
		drain(t, s, s.Window()/2, 50*time.Millisecond, 100*time.Millisecond, 1)
	}
	if s.Window() != 8000 {
		t.Fatalf("window %d, want the 8000 maximum", s.Window())
	}
	if c.Window() < 12000 {
		t.Fatalf("connection window %d, want >= 12000", c.Window())
	}
}

func TestAutoTuneNoGrowthWhenSlow(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 1000, Max: 8000}, WindowConfig{Initial: 1000, Max: 1 << 20})
	// Half a window per 250 ms: a full window takes 500 ms, 5 RTTs (4 allowed).
	drain(t, s, 500, 250*time.Millisecond, 100*time.Millisecond, 20)
	if s.Window() != 1000 || c.Window() != 1000 {
		t.Fatalf("windows grew for a slow reader: stream %d conn %d", s.Window(), c.Window())
	}
	// Without an RTT estimate nothing grows either.
	s2, _ := newPair(WindowConfig{Initial: 1000, Max: 8000}, WindowConfig{Initial: 1000, Max: 1 << 20})
	drain(t, s2, 500, time.Nanosecond, 0, 20)
	if s2.Window() != 1000 {
		t.Fatalf("window grew without an RTT sample: %d", s2.Window())
	}
	// A maximum below the initial window disables tuning.
	s3, _ := newPair(WindowConfig{Initial: 1000, Max: 10}, WindowConfig{Initial: 1000})
	drain(t, s3, 500, time.Nanosecond, time.Second, 20)
	if s3.Window() != 1000 {
		t.Fatalf("window changed with tuning disabled: %d", s3.Window())
	}
}

func TestConnectionAutoTune(t *testing.T) {
	c := NewConnReceiver(WindowConfig{Initial: 1000, Max: 4000})
	s := NewStreamReceiver(0, c, WindowConfig{Initial: 1 << 30})
	now := t0
	for i := 0; i < 12; i++ {
		mustNil(t, s.OnStreamFrame(s.Highest(), c.Limit()-c.Highest(), false))
		mustNil(t, s.Consume(s.Highest()-s.Consumed()))
		now = now.Add(10 * time.Millisecond)
		c.MaybeUpdate(now, 100*time.Millisecond)
	}
	if c.Window() != 4000 {
		t.Fatalf("connection window %d, want the 4000 maximum", c.Window())
	}
}

func TestHoldGrowth(t *testing.T) {
	s, c := newPair(WindowConfig{Initial: 1000, Max: 8000}, WindowConfig{Initial: 1000, Max: 1 << 20})
	c.HoldGrowth(true)
	// Fast enough to grow (as in TestAutoTuneGrowsWhenFast), but held: the
	// updates give back the consumed credit at the initial windows.
	drain(t, s, 500, 50*time.Millisecond, 100*time.Millisecond, 10)
	if s.Window() != 1000 || c.Window() != 1000 {
		t.Fatalf("windows grew while held: stream %d conn %d", s.Window(), c.Window())
	}
	if s.Limit() != s.Consumed()+1000 {
		t.Fatalf("stream limit %d after consuming %d: the credit was not given back", s.Limit(), s.Consumed())
	}
	c.HoldGrowth(false)
	drain(t, s, 500, 50*time.Millisecond, 100*time.Millisecond, 3)
	if s.Window() <= 1000 {
		t.Fatalf("window %d: growth did not resume", s.Window())
	}
}

// answerGrowth plays the connection: it takes c's growth request, if any,
// asks allow and applies a yes.
func answerGrowth(c *ConnReceiver, allow func(uint64) bool) {
	if delta, ok := c.TakeGrowthRequest(); ok && allow(delta) {
		c.Grow(delta)
	}
}

func TestGrowthRequests(t *testing.T) {
	grow := func(allow func(uint64) bool) (*ConnReceiver, []uint64) {
		c := NewConnReceiver(WindowConfig{Initial: 1000, Max: 4000})
		c.AskBeforeGrowth()
		var asked []uint64
		s := NewStreamReceiver(0, c, WindowConfig{Initial: 1 << 30})
		now := t0
		for i := 0; i < 12; i++ {
			mustNil(t, s.OnStreamFrame(s.Highest(), c.Limit()-c.Highest(), false))
			mustNil(t, s.Consume(s.Highest()-s.Consumed()))
			now = now.Add(10 * time.Millisecond)
			window := c.Window()
			c.MaybeUpdate(now, 100*time.Millisecond)
			if c.Window() != window {
				t.Fatalf("window grew from %d to %d without approval", window, c.Window())
			}
			answerGrowth(c, func(delta uint64) bool {
				asked = append(asked, delta)
				return allow(delta)
			})
		}
		return c, asked
	}
	c, asked := grow(func(uint64) bool { return false })
	if c.Window() != 1000 || len(asked) == 0 || asked[0] != 1000 {
		t.Fatalf("refused growth: window %d, asked %v", c.Window(), asked)
	}
	c, asked = grow(func(delta uint64) bool { return delta <= 1000 })
	if c.Window() != 2000 {
		t.Fatalf("growth by 1000 allowed once: window %d, asked %v", c.Window(), asked)
	}
	c, _ = grow(func(uint64) bool { return true })
	if c.Window() != 4000 {
		t.Fatalf("growth always allowed: window %d, want the maximum 4000", c.Window())
	}
	if _, ok := c.TakeGrowthRequest(); ok {
		t.Fatal("a request was left after it was taken")
	}

	// A stream window growing past the connection's requests growth too.
	s, c2 := newPair(WindowConfig{Initial: 1000, Max: 8000}, WindowConfig{Initial: 1000, Max: 1 << 20})
	c2.AskBeforeGrowth()
	drain(t, s, 500, 50*time.Millisecond, 100*time.Millisecond, 3)
	delta, ok := c2.TakeGrowthRequest()
	if s.Window() != 2000 || c2.Window() != 1000 || !ok || delta != 2000 {
		t.Fatalf("stream %d conn %d request %d %v, want a request for 3000 (1.5 stream windows)", s.Window(), c2.Window(), delta, ok)
	}
	c2.Grow(delta)
	if c2.Window() != 3000 {
		t.Fatalf("approved growth by %d: window %d", delta, c2.Window())
	}

	// While growth is held no request comes out.
	c3 := NewConnReceiver(WindowConfig{Initial: 1000, Max: 4000})
	c3.AskBeforeGrowth()
	c3.grow(2000)
	c3.HoldGrowth(true)
	if _, ok := c3.TakeGrowthRequest(); ok {
		t.Fatal("a request came out while growth was held")
	}
}

// TestAutoTuneFirstEpochFromArrival: with the first arrival noted (as
// quic-go starts its epoch at the first frame), the very first update may
// double a window that was drained fast; without it, the first update only
// starts the epoch.
func TestAutoTuneFirstEpochFromArrival(t *testing.T) {
	for _, noted := range []bool{true, false} {
		s, c := newPair(WindowConfig{Initial: 1000, Max: 8000}, WindowConfig{Initial: 1 << 20, Max: 1 << 20})
		if noted {
			s.NoteArrival(t0)
		}
		mustNil(t, s.OnStreamFrame(0, 1000, false))
		mustNil(t, s.Consume(1000))
		if _, ok := s.MaybeUpdate(t0.Add(50*time.Millisecond), 100*time.Millisecond); !ok {
			t.Fatal("no update after the window was drained")
		}
		want := uint64(1000)
		if noted {
			want = 2000
		}
		if s.Window() != want {
			t.Errorf("arrival noted %v: window %d, want %d", noted, s.Window(), want)
		}
		if c.w.epochStarted != noted {
			t.Errorf("arrival noted %v: connection epoch started %v", noted, c.w.epochStarted)
		}
	}
}
