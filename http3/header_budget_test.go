package http3

import (
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestByteBudgetFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inUse atomic.Int64
		b := newByteBudget(100, &inUse)
		if err := b.acquire(60, time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
		// 50 does not fit; 10 would, but waits behind it (arrival order).
		order := make(chan uint64, 2)
		for _, n := range []uint64{50, 10} {
			go func() {
				if err := b.acquire(n, time.Time{}, nil); err != nil {
					t.Errorf("acquire(%d): %v", n, err)
				}
				order <- n
			}()
			synctest.Wait()
		}
		select {
		case n := <-order:
			t.Fatalf("acquire(%d) returned while 60 of 100 were held", n)
		default:
		}
		if inUse.Load() != 60 {
			t.Fatalf("in use %d, want 60", inUse.Load())
		}
		b.release(60)
		if a, c := <-order, <-order; a+c != 60 {
			t.Fatalf("granted %d and %d", a, c)
		}
		if inUse.Load() != 60 {
			t.Fatalf("in use %d, want 60", inUse.Load())
		}
		b.release(50)
		b.release(10)
		if inUse.Load() != 0 {
			t.Fatalf("in use %d after releasing everything", inUse.Load())
		}
	})
}

func TestByteBudgetDeadlineAndDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newByteBudget(100, nil)
		if err := b.acquire(100, time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := b.acquire(1, start.Add(time.Second), nil); !errors.Is(err, errBudgetWait) {
			t.Fatalf("acquire past its deadline: %v", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("gave up after %v, want the 1s deadline", d)
		}
		done := make(chan struct{})
		errc := make(chan error)
		go func() { errc <- b.acquire(1, time.Time{}, done) }()
		synctest.Wait()
		close(done)
		if err := <-errc; !errors.Is(err, errBudgetWait) {
			t.Fatalf("acquire after done: %v", err)
		}
		// The waiters that gave up left the queue: a new one is served.
		b.release(100)
		if err := b.acquire(100, time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.acquire(101, time.Time{}, nil); !errors.Is(err, errBudgetWait) {
			t.Fatalf("acquire over the limit: %v", err)
		}
	})
}

// A waiter at the head that gives up lets the smaller ones behind it in.
func TestByteBudgetGiveUpUnblocksQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newByteBudget(100, nil)
		if err := b.acquire(90, time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
		go func() { _ = b.acquire(50, time.Now().Add(time.Second), nil) }()
		synctest.Wait()
		got := make(chan error)
		go func() { got <- b.acquire(10, time.Time{}, nil) }()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("10 bytes granted ahead of the 50 waiting before them")
		default:
		}
		time.Sleep(time.Second) // the 50 gives up
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	})
}

// sizeRecorder returns data in reads of at most step bytes and records
// the largest buffer it was asked to fill.
type sizeRecorder struct {
	data    []byte
	step    int
	largest int
}

func (r *sizeRecorder) Read(p []byte) (int, error) {
	r.largest = max(r.largest, len(p))
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReadPayloadFollowsArrivals: the buffer of a payload read whole
// grows with the bytes that arrive, not with the declared length.
func TestReadPayloadFollowsArrivals(t *testing.T) {
	const declared = 1 << 20
	for _, sent := range []int{0, 500, payloadChunk, 3 * payloadChunk, 100 << 10} {
		r := &sizeRecorder{data: make([]byte, sent), step: 1000}
		fr := newFrameReader(r, declared)
		fr.cur, fr.remaining = frameHeader{Type: frameTypeHeaders, Length: declared}, declared
		got, err := fr.readPayload(nil)
		wantCode(t, err, ErrCodeFrameError) // the stream ends early
		// The buffer never grows past twice what arrived plus one chunk.
		if limit := 2*sent + payloadChunk; r.largest > limit || cap(got) > limit {
			t.Errorf("%d bytes of a %d-byte frame: read buffer %d, kept %d, want at most %d", sent, declared, r.largest, cap(got), limit)
		}
	}
	// A whole payload is read exactly.
	r := &sizeRecorder{data: make([]byte, 3*payloadChunk+5), step: 700}
	fr := newFrameReader(r, declared)
	fr.cur, fr.remaining = frameHeader{Type: frameTypeHeaders, Length: 3*payloadChunk + 5}, 3*payloadChunk+5
	got, err := fr.readPayload([]byte("ab"))
	if err != nil || len(got) != 3*payloadChunk+7 || string(got[:2]) != "ab" {
		t.Fatalf("payload of %d bytes, %v", len(got), err)
	}
}
