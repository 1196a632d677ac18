package connid

import (
	"bytes"
	"errors"
	"testing"
)

func TestStatelessResetSize(t *testing.T) {
	for _, tc := range []struct {
		trigger, size int
		ok            bool
	}{
		{0, 0, false},
		{20, 0, false},
		{21, 0, false}, // a reply must be smaller, and 20 bytes is too small
		{22, 21, true},
		{43, 42, true},
		{44, 43, true},
		{65, 64, true},
		{1500, MaxStatelessResetSize, true},
	} {
		size, ok := StatelessResetSize(tc.trigger)
		if size != tc.size || ok != tc.ok {
			t.Errorf("StatelessResetSize(%d) = %d, %v; want %d, %v", tc.trigger, size, ok, tc.size, tc.ok)
		}
		if ok && (size >= tc.trigger || size < MinStatelessResetSize) {
			t.Errorf("StatelessResetSize(%d) = %d breaks the loop rule", tc.trigger, size)
		}
	}
}

func TestAppendStatelessReset(t *testing.T) {
	token := [TokenLen]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	prefix := []byte{0xff, 0xee}
	for _, size := range []int{MinStatelessResetSize, 42, 1200} {
		b, err := AppendStatelessReset(append([]byte(nil), prefix...), token, size)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b[:2], prefix) || len(b) != 2+size {
			t.Fatalf("size %d: got %d bytes", size, len(b))
		}
		p := b[2:]
		if p[0]&0xc0 != 0x40 {
			t.Fatalf("first byte %08b is not a short header with the fixed bit", p[0])
		}
		if !bytes.Equal(p[size-TokenLen:], token[:]) {
			t.Fatal("token is not at the end")
		}
	}
	// The unpredictable bits differ between resets: 38+ random bits make
	// a collision in 32 tries vanishingly unlikely.
	seen := map[string]bool{}
	firstBits := map[byte]bool{}
	for range 32 {
		b, _ := AppendStatelessReset(nil, token, MinStatelessResetSize)
		seen[string(b[:5])] = true
		firstBits[b[0]&0x3f] = true
	}
	if len(seen) != 32 || len(firstBits) < 2 {
		t.Fatalf("resets are predictable: %d distinct of 32, %d first-byte patterns", len(seen), len(firstBits))
	}
}

func TestAppendStatelessResetTooSmall(t *testing.T) {
	b := []byte{9}
	got, err := AppendStatelessReset(b, [TokenLen]byte{}, MinStatelessResetSize-1)
	if !errors.Is(err, ErrResetTooSmall) || !bytes.Equal(got, b) {
		t.Fatalf("got %x, %v", got, err)
	}
}

func TestResetDetector(t *testing.T) {
	var d ResetDetector
	t1 := [TokenLen]byte{1}
	t2 := [TokenLen]byte{2}
	r1, _ := AppendStatelessReset(nil, t1, 30)
	r2, _ := AppendStatelessReset(nil, t2, 30)
	if d.IsStatelessReset(r1) {
		t.Fatal("empty detector matched")
	}
	d.Add(t1)
	d.Add(t1)
	d.Add(t2)
	if d.Len() != 2 {
		t.Fatalf("Len = %d after a duplicate Add", d.Len())
	}
	if !d.IsStatelessReset(r1) || !d.IsStatelessReset(r2) {
		t.Fatal("watched token not detected")
	}
	other := append([]byte(nil), r1...)
	other[len(other)-1] ^= 1
	if d.IsStatelessReset(other) {
		t.Fatal("wrong token detected")
	}
	// A long-header-looking packet ending in the token is a reset too.
	long := append([]byte{0xc0, 0, 0, 0, 1, 0}, t1[:]...)
	if !d.IsStatelessReset(long) {
		t.Fatal("reset with a long header form not detected")
	}
	// 20 bytes ending in the token: too short to be a reset.
	if d.IsStatelessReset(append([]byte{0x40, 1, 2, 3}, t1[:]...)) {
		t.Fatal("20-byte datagram detected as reset")
	}
	if d.IsStatelessReset(t1[:]) || d.IsStatelessReset(nil) {
		t.Fatal("short datagram detected as reset")
	}
	if !d.Remove(t1) || d.Remove(t1) {
		t.Fatal("Remove does not report membership")
	}
	if d.IsStatelessReset(r1) || !d.IsStatelessReset(r2) {
		t.Fatal("Remove removed the wrong token")
	}
	d.Clear()
	if d.Len() != 0 || d.IsStatelessReset(r2) {
		t.Fatal("Clear left tokens")
	}
}

func TestResetDetectorAllocs(t *testing.T) {
	var d ResetDetector
	for i := range 4 {
		d.Add([TokenLen]byte{byte(i)})
	}
	pkt, _ := AppendStatelessReset(nil, [TokenLen]byte{3}, 40)
	var sink bool
	if n := testing.AllocsPerRun(1000, func() { sink = d.IsStatelessReset(pkt) }); n != 0 {
		t.Fatalf("IsStatelessReset allocates %v times", n)
	}
	_ = sink
}
