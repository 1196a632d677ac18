package xdp

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestObjectUpToDate fails when bpf/fastpath.bpf.c or the shared cache
// header changed after fastpath_bpfel.o was generated.
func TestObjectUpToDate(t *testing.T) {
	f, err := os.Open("fastpath_bpfel.sources")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	n := 0
	for s.Scan() {
		sum, path, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			t.Fatalf("bad line %q in fastpath_bpfel.sources", s.Text())
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s changed since fastpath_bpfel.o was generated: run go generate ./offload/xdp (needs clang)", path)
		}
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("fastpath_bpfel.sources lists %d files, want 4", n)
	}
}
