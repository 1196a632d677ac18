//go:build linux

package abuse

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// siteWithBigFile makes a root directory with a sparse file of size bytes
// (big.bin, no disk blocks) and a small page (hello.txt, returned).
func siteWithBigFile(t *testing.T, size int64) (root string, hello []byte) {
	t.Helper()
	root = t.TempDir()
	f, err := os.Create(filepath.Join(root, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	hello = []byte("hello from under attack\n")
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), hello, 0o644); err != nil {
		t.Fatal(err)
	}
	return root, hello
}

// waitQuiet waits until the server has used less than 20 ms of CPU over
// half a second: everything an attack set in motion has run as far as it
// can, so what it holds now is what it keeps. The minute is a hang guard.
func waitQuiet(t *testing.T, s *server) {
	t.Helper()
	const span, busy = 500 * time.Millisecond, 20 * time.Millisecond
	deadline := time.Now().Add(time.Minute)
	last := s.cpu()
	for time.Now().Before(deadline) {
		time.Sleep(span)
		s.alive()
		now := s.cpu()
		if now-last < busy {
			return
		}
		last = now
	}
	t.Fatal("the server never went quiet during the attack")
}
