//go:build linux

package xdp

import "testing"

// TestRotationRacingLookups rotates the shared cache from Go while the
// program looks a CID up, so the C lookup reads tables that Go is
// clearing and sees the generation move. The CID is looked up again
// after each rotation (refreshing it), so no rotation may ever make it
// miss: at most one rotation starts between two lookups that follow a
// refresh (docs/fastpath.md, "Lifetime").
func TestRotationRacingLookups(t *testing.T) {
	p := loadFiltering(t)
	c := p.Cache()
	cid := []byte{0x52, 0x4f, 0x54, 0x41, 0x54, 0x45, 0x21, 0x21}
	if err := c.Insert(cid); err != nil {
		t.Fatal(err)
	}
	frame := udp4(testPort, shortPacket(cid))
	rotate := make(chan struct{})
	rotated := make(chan struct{}, 1)
	go func() {
		for range rotate {
			c.Rotate()
			rotated <- struct{}{}
		}
	}()
	defer close(rotate)
	const rounds = 400
	for i := range rounds {
		rotate <- struct{}{} // rotation i starts now, concurrently with the next run
		during := run(t, p, frame)
		<-rotated
		after := run(t, p, frame)
		if during != xdpPass || after != xdpPass {
			t.Fatalf("rotation %d: action %d during, %d after; want pass (%d)", i, during, after, xdpPass)
		}
	}
	if c.Generation() != rounds {
		t.Fatalf("generation %d, want %d", c.Generation(), rounds)
	}
}
