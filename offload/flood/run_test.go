package flood

import (
	"context"
	"errors"
	"testing"
	"time"
)

// recordSender accepts everything and notes when each packet was sent.
type recordSender struct {
	timed    bool // record times
	times    []time.Time
	deadline time.Time
	failAt   map[int]bool // packet indexes to refuse
	n        int
}

func (s *recordSender) Send(pkts [][]byte) (int, error) {
	for i := range pkts {
		if s.failAt[s.n] {
			s.n++
			return i, errors.New("refused")
		}
		s.n++
		if s.timed {
			s.times = append(s.times, time.Now())
		}
	}
	return len(pkts), nil
}

func (s *recordSender) SetDeadline(t time.Time) error { s.deadline = t; return nil }
func (s *recordSender) Close() error                  { return nil }

func TestRunRefusesUnbounded(t *testing.T) {
	gen, _ := NewGenerator(GeneratorConfig{PoolSize: 1})
	for _, c := range []RunConfig{
		{Count: 0, Duration: time.Second},
		{Count: 10, Duration: 0},
		{Count: 10, Duration: -time.Second},
	} {
		s := &recordSender{}
		if _, err := Run(context.Background(), c, gen, s); !errors.Is(err, ErrUnbounded) {
			t.Errorf("%+v: %v, want ErrUnbounded", c, err)
		}
		if s.n != 0 {
			t.Errorf("%+v: sent %d packets", c, s.n)
		}
	}
	if _, err := Run(context.Background(), RunConfig{Count: 1, Duration: time.Second, Rate: -5}, gen, &recordSender{}); err == nil {
		t.Error("negative rate accepted")
	}
}

func TestRunCountsErrors(t *testing.T) {
	gen, _ := NewGenerator(GeneratorConfig{PoolSize: 3})
	s := &recordSender{failAt: map[int]bool{0: true, 5: true, 6: true, 99: true}}
	st, err := Run(context.Background(), RunConfig{Count: 100, Duration: time.Hour, Batch: 8}, gen, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != 96 || st.Errors != 4 || st.FirstError != "refused" || s.n != 100 {
		t.Fatalf("stats %+v after %d attempts", st, s.n)
	}
	if s.deadline.IsZero() {
		t.Fatal("no send deadline set")
	}
}

type stuckSender struct{ recordSender }

func (*stuckSender) Send([][]byte) (int, error) { return 0, nil }

func TestRunStuckSenderEnds(t *testing.T) {
	gen, _ := NewGenerator(GeneratorConfig{PoolSize: 1})
	st, err := Run(context.Background(), RunConfig{Count: 50, Duration: time.Hour, Batch: 10}, gen, &stuckSender{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != 0 || st.Errors != 50 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRunCancelled(t *testing.T) {
	gen, _ := NewGenerator(GeneratorConfig{PoolSize: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := Run(ctx, RunConfig{Count: 50, Duration: time.Hour}, gen, &recordSender{})
	if err != nil || st.Stopped != "cancelled" || st.Sent != 0 {
		t.Fatalf("%+v %v", st, err)
	}
}

type failingSource struct{}

func (failingSource) Next([]byte) ([]byte, error) { return nil, errors.New("broken source") }

func TestRunSourceError(t *testing.T) {
	if _, err := Run(context.Background(), RunConfig{Count: 5, Duration: time.Hour}, failingSource{}, &recordSender{}); err == nil {
		t.Fatal("source error not reported")
	}
}
