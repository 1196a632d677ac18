package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/token"
)

func TestKeygenStdout(t *testing.T) {
	code, out, _ := runCLI("keygen")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if _, err := token.ParseSecret([]byte(out)); err != nil || len(out) != 65 {
		t.Fatalf("output %q: %v", out, err)
	}
	_, out2, _ := runCLI("keygen")
	if out == out2 {
		t.Fatal("two secrets are equal")
	}
}

func TestKeygenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "root.key")
	if code, _, errOut := runCLI("keygen", "-o", path); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o", st.Mode().Perm())
	}
	first, err := token.ReadSecretFile(path)
	if err != nil {
		t.Fatal(err)
	}

	code, _, errOut := runCLI("keygen", "-o", path)
	if code != exitFail || !strings.Contains(errOut, "--force") {
		t.Fatalf("overwrite without --force: exit %d, %q", code, errOut)
	}
	if again, _ := token.ReadSecretFile(path); string(again) != string(first) {
		t.Fatal("file changed without --force")
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI("keygen", "--force", "-o", path); code != exitOK {
		t.Fatalf("--force: exit %d: %s", code, errOut)
	}
	st, _ = os.Stat(path)
	second, err := token.ReadSecretFile(path)
	if err != nil || string(second) == string(first) || st.Mode().Perm() != 0o600 {
		t.Fatalf("after --force: mode %04o, err %v", st.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestKeygenUsage(t *testing.T) {
	for _, args := range [][]string{{"keygen", "extra"}, {"keygen", "--bogus"}, {"keygen", "-o"}} {
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, "usage: turboretry keygen") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if code, _, errOut := runCLI("keygen", "-o", filepath.Join(t.TempDir(), "no", "such", "dir")); code != exitFail || errOut == "" {
		t.Errorf("unwritable path: exit %d, %q", code, errOut)
	}
}
