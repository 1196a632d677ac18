package live

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestObjectUpToDate fails when bpf/live.bpf.c changed after live_bpfel.o
// and live_bpfeb.o were generated.
func TestObjectUpToDate(t *testing.T) {
	f, err := os.Open("live.sources")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	n := 0
	for s.Scan() {
		sum, path, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			t.Fatalf("bad line %q in live.sources", s.Text())
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s changed since the objects were generated: run go generate ./offload/flood/live (needs clang)", path)
		}
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("live.sources lists %d files, want 1", n)
	}
}
