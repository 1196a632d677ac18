package reuseport

import (
	"testing"

	"github.com/turboretry/turboretry/internal/bpfsources"
)

// TestObjectUpToDate fails when bpf/steer.bpf.c or the shared headers
// changed after steer_bpfel.o was generated.
func TestObjectUpToDate(t *testing.T) {
	bpfsources.Check(t, "steer_bpfel.sources", "./offload/reuseport", 4)
}
