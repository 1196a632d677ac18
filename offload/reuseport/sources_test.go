package reuseport

import (
	"testing"

	"github.com/turboretry/turboretry/internal/bpfsources"
)

// TestObjectUpToDate fails when bpf/steer.bpf.c or the shared headers
// changed after steer_bpfel.o and steer_bpfeb.o were generated.
func TestObjectUpToDate(t *testing.T) {
	bpfsources.Check(t, "steer.sources", "./offload/reuseport", 4)
}
