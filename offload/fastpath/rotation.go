package fastpath

import (
	"context"
	"fmt"
	"time"
)

// DefaultWindow is T_W, the rotation period of docs/design.md.
const DefaultWindow = 30 * time.Second

// RunRotation calls Rotate every `every` until ctx is done, then returns
// ctx's error. Run exactly one rotation driver per set of tables (a shared
// cache's data plane never rotates).
func (c *Cache) RunRotation(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("fastpath: rotation period %v must be positive", every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			c.Rotate()
		}
	}
}
