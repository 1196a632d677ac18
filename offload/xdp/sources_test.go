package xdp

import (
	"testing"

	"github.com/turboretry/turboretry/internal/bpfsources"
)

// TestObjectUpToDate fails when bpf/fastpath.bpf.c or the shared headers
// changed after fastpath_bpfel.o and fastpath_bpfeb.o were generated.
func TestObjectUpToDate(t *testing.T) {
	bpfsources.Check(t, "fastpath.sources", "./offload/xdp", 4)
}
