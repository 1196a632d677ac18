package flowcontrol

import (
	"testing"
	"time"
)

// FuzzReceiver feeds two streams of one connection an arbitrary sequence of
// STREAM and RESET_STREAM frames, reads and window updates, and checks the
// accounting invariants after every step. Each operation is four bytes:
// opcode, stream, and two operands.
func FuzzReceiver(f *testing.F) {
	f.Add([]byte{0, 0, 0, 64, 2, 0, 0, 40, 4, 0, 0, 0})
	f.Add([]byte{0, 1, 10, 5, 5, 1, 4, 5, 1, 1, 0, 50, 0, 1, 0, 60})
	f.Add([]byte{0, 0, 0, 60, 0, 1, 0, 60, 3, 0, 0, 0, 4, 0, 1, 0})
	f.Add([]byte{1, 0, 0, 200, 0, 0, 255, 255, 2, 0, 0, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		c := NewConnReceiver(WindowConfig{Initial: 96, Max: 512})
		var s [2]StreamReceiver
		s[0].Init(0, c, WindowConfig{Initial: 64, Max: 256})
		s[1].Init(4, c, WindowConfig{Initial: 64, Max: 256})
		now := time.Unix(0, 0)
		for i := 0; i+3 < len(ops); i += 4 {
			op, st, a, b := ops[i]%6, &s[ops[i+1]%2], uint64(ops[i+2]), uint64(ops[i+3])
			before0, before1, beforeC := s[0], s[1], *c
			var err error
			switch op {
			case 0, 5:
				err = st.OnStreamFrame(a, b, op == 5)
			case 1:
				err = st.OnResetStream(a + b)
			case 2:
				err = st.Consume(b)
			case 3:
				st.Abandon()
			case 4:
				now = now.Add(time.Duration(a) * time.Millisecond)
				st.MaybeUpdate(now, time.Duration(b)*time.Millisecond)
				c.MaybeUpdate(now, time.Duration(b)*time.Millisecond)
			}
			if err != nil && (s[0] != before0 || s[1] != before1 || *c != beforeC) {
				t.Fatalf("op %d failed (%v) but changed state", op, err)
			}
			if c.Limit() < beforeC.Limit() || s[0].Limit() < before0.Limit() || s[1].Limit() < before1.Limit() {
				t.Fatal("an advertised limit decreased")
			}
			for j := range s {
				x := &s[j]
				if x.Highest() > x.Limit() || x.Consumed() > x.Highest() {
					t.Fatalf("stream %d: consumed %d highest %d limit %d", j, x.Consumed(), x.Highest(), x.Limit())
				}
				if fs, ok := x.FinalSize(); ok && fs != x.Highest() {
					t.Fatalf("stream %d: final size %d, highest %d", j, fs, x.Highest())
				}
			}
			if c.Highest() > c.Limit() || c.Highest() != s[0].Highest()+s[1].Highest() || c.Consumed() != s[0].Consumed()+s[1].Consumed() {
				t.Fatalf("connection accounting: highest %d consumed %d limit %d", c.Highest(), c.Consumed(), c.Limit())
			}
		}
	})
}
