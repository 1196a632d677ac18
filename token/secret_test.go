package token

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeKeyFile(t *testing.T, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "root.key")
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // WriteFile is subject to umask
		t.Fatal(err)
	}
	return p
}

func TestReadSecretFile(t *testing.T) {
	hexRoot := "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	good := []struct {
		name string
		data string
	}{
		{"hex", hexRoot},
		{"hex newline", hexRoot + "\n"},
		{"hex crlf", hexRoot + "\r\n"},
		{"upper-case hex", strings.ToUpper(hexRoot)},
		{"raw", string(vecRoot())},
	}
	for _, tc := range good {
		p := writeKeyFile(t, []byte(tc.data), 0o600)
		s, err := ReadSecretFile(p)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(s, vecRoot()) {
			t.Errorf("%s: secret %x", tc.name, s)
		}
		if _, err := LoadKeyRing(p, 0); err != nil {
			t.Errorf("%s: LoadKeyRing: %v", tc.name, err)
		}
	}

	bad := []struct {
		name string
		data string
		msg  string
	}{
		{"empty", "", "got 0 bytes"},
		{"31 raw", string(vecRoot()[:31]), "got 31 bytes"},
		{"33 raw", string(vecRoot()) + "\n", "got 33 bytes"},
		{"63 hex", hexRoot[:63], "got 63 bytes"},
		{"65 hex", hexRoot + "0", "got 65 bytes"},
		{"hex two newlines", hexRoot + "\n\n", "got 66 bytes"},
		{"hex leading space", " " + hexRoot, "got 65 bytes"},
		{"non-hex", "zz" + hexRoot[2:], "not hex"},
		{"non-hex newline", hexRoot[:62] + "g\n", "not hex"},
		{"too long", strings.Repeat("a", 1000), "too long"},
	}
	for _, tc := range bad {
		p := writeKeyFile(t, []byte(tc.data), 0o600)
		_, err := ReadSecretFile(p)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.msg)
		}
	}
}

func TestReadSecretFileMode(t *testing.T) {
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o640, true},
		{0o644, false},
		{0o604, false},
		{0o666, false},
	} {
		p := writeKeyFile(t, []byte(FormatSecret(vecRoot())), tc.mode)
		_, err := ReadSecretFile(p)
		if (err == nil) != tc.ok {
			t.Errorf("mode %04o: err %v, want ok=%v", tc.mode, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "world-readable") {
			t.Errorf("mode %04o: error %q does not explain", tc.mode, err)
		}
	}
	if _, err := ReadSecretFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file accepted")
	}
	if _, err := ReadSecretFile(t.TempDir()); err == nil {
		t.Error("directory accepted")
	}
}

func TestGenerateSecret(t *testing.T) {
	a, err := GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateSecret()
	if len(a) != SecretLen || bytes.Equal(a, b) {
		t.Fatalf("secrets %x %x", a, b)
	}
	f := FormatSecret(a)
	if len(f) != 65 || f[64] != '\n' {
		t.Fatalf("formatted %q", f)
	}
	back, err := ParseSecret([]byte(f))
	if err != nil || !bytes.Equal(back, a) {
		t.Fatalf("round trip: %x %v", back, err)
	}
}
