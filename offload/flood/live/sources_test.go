package live

import (
	"testing"

	"github.com/turboretry/turboretry/internal/bpfsources"
)

// TestObjectUpToDate fails when bpf/live.bpf.c changed after live_bpfel.o
// and live_bpfeb.o were generated.
func TestObjectUpToDate(t *testing.T) {
	bpfsources.Check(t, "live.sources", "./offload/flood/live", 1)
}
