package reuseport

import "testing"

// TestDefaultWorkers: one worker per two CPUs, at least one, at most
// MaxWorkers.
func TestDefaultWorkers(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{
		{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 2}, {16, 8}, {4 * MaxWorkers, MaxWorkers},
	} {
		if got := DefaultWorkers(c.cpus); got != c.want {
			t.Errorf("DefaultWorkers(%d) = %d, want %d", c.cpus, got, c.want)
		}
	}
}
