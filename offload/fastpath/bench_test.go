package fastpath

import "testing"

func BenchmarkSipHash24_8(b *testing.B) {
	cid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	var sink uint64
	b.ReportAllocs()
	b.SetBytes(8)
	for b.Loop() {
		sink ^= SipHash24(0x0706050403020100, 0x0f0e0d0c0b0a0908, cid)
	}
	_ = sink
}

func BenchmarkInsert(b *testing.B) {
	c := newTestCache(b)
	s := newCIDStream(10)
	var buf [8]byte
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Insert(s.next(buf[:]))
	}
}

func BenchmarkLookupHit(b *testing.B) {
	c := newTestCache(b)
	cids := make([][]byte, 1<<16)
	s := newCIDStream(11)
	for i := range cids {
		cids[i] = s.next(nil)
		_ = c.Insert(cids[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if !c.Lookup(cids[i&(len(cids)-1)]) {
			b.Fatal("miss")
		}
		i++
	}
}

// BenchmarkLookupMiss probes a cache holding 1.2 M CIDs with fresh ones;
// ~4 % of them are false positives, the rest miss both tables.
func BenchmarkLookupMiss(b *testing.B) {
	c := newTestCache(b)
	s := newCIDStream(12)
	var buf [8]byte
	for range paperN {
		_ = c.Insert(s.next(buf[:]))
	}
	probe := newCIDStream(13)
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Lookup(probe.next(buf[:]))
	}
}

func BenchmarkRotate(b *testing.B) {
	c := newTestCache(b)
	b.ReportAllocs()
	b.SetBytes(TableBytes)
	for b.Loop() {
		c.Rotate()
	}
}

// BenchmarkLookupHitParallel measures the lock-free hot path under
// contention on the shared tables.
func BenchmarkLookupHitParallel(b *testing.B) {
	c := newTestCache(b)
	cids := make([][]byte, 1<<16)
	s := newCIDStream(14)
	for i := range cids {
		cids[i] = s.next(nil)
		_ = c.Insert(cids[i])
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if !c.Lookup(cids[i&(len(cids)-1)]) {
				b.Error("miss")
				return
			}
			i++
		}
	})
}
