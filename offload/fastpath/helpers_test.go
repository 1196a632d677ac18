package fastpath

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

func newTestCache(t testing.TB) *Cache {
	t.Helper()
	c, err := New(refKey(), DefaultCIDLen)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cidStream yields deterministic pseudo-random 8-byte CIDs.
type cidStream struct{ r *rand.Rand }

func newCIDStream(seed uint64) *cidStream {
	return &cidStream{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (s *cidStream) next(dst []byte) []byte {
	return binary.LittleEndian.AppendUint64(dst[:0], s.r.Uint64())
}

// theoreticalFP is (1 - e^{-kn/m})^k.
func theoreticalFP(n int) float64 {
	x := 1 - math.Exp(-float64(K*n)/float64(M))
	return x * x * x
}
