package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret.key")
	if err := WriteFileAtomic(path, []byte("one\n"), 0o600, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	err = WriteFileAtomic(path, []byte("two\n"), 0o600, false)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second write without overwrite: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one\n" {
		t.Fatalf("refused write changed the file: %q", b)
	}
	if err := WriteFileAtomic(path, []byte("two\n"), 0o644, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two\n" {
		t.Fatalf("overwrite: %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode after overwrite %v, want 0644", st.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteFileAtomicMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	if err := WriteFileAtomic(path, []byte("x"), 0o600, true); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}
