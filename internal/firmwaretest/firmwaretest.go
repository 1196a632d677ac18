// Package firmwaretest is for tests only: it builds one of
// dpa-firmware/test's C host tests with gcc and runs it on vectors the Go
// test just generated, so that `go test` proves the Go and the C
// implementations agree (offload/fastpath's cache, quiclb's connection
// IDs).
package firmwaretest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Run compiles dir/test/source with gcc (warnings as errors, dir/include
// and dir/flexio on the include path), runs it with a file holding
// vectors, fails tb on any error and logs the program's summary. Without
// gcc it skips, saying so.
func Run(tb testing.TB, dir, source string, vectors []byte) {
	tb.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		tb.Skip("gcc not found: skipping the C cross-check (install gcc to run it)")
	}
	tmp := tb.TempDir()
	vec := filepath.Join(tmp, "vectors.txt")
	if err := os.WriteFile(vec, vectors, 0o644); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(tmp, "ctest")
	build := exec.Command(gcc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic",
		"-I", filepath.Join(dir, "include"), "-I", filepath.Join(dir, "flexio"),
		"-o", bin, filepath.Join(dir, "test", source))
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, vec).CombinedOutput()
	if err != nil {
		tb.Fatalf("C test failed: %v\n%s", err, out)
	}
	tb.Logf("%s", bytes.TrimSpace(out))
}
