package host

import (
	"errors"
	"strings"
	"testing"
)

// TestReleaseRefusedBloomOnly: in the Bloom-only fast path the connections'
// IDs live in this process's program cache, so a successor's program would
// drop their packets: the integrated datapath is not given up for a
// restart, and stays as it was.
func TestReleaseRefusedBloomOnly(t *testing.T) {
	p := &xdpPart{cfg: &Config{Mode: ModeXDP, CacheOnly: true}}
	err := p.release()
	if !errors.Is(err, ErrReleaseBloomOnly) || !strings.Contains(err.Error(), "--fastpath bloom") {
		t.Fatalf("release with the Bloom-only fast path: %v, want a refusal naming --fastpath bloom", err)
	}
	// With the MAC fast path there is nothing to refuse; nothing runs
	// here, so nothing is closed either.
	p.cfg.CacheOnly = false
	if err := p.release(); err != nil {
		t.Fatalf("release with the MAC fast path: %v", err)
	}
	if p.running() != nil {
		t.Fatal("released, yet a datapath runs")
	}
}
