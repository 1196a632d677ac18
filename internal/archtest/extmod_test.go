package archtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExternalModule builds and runs testdata/extmod as a module of its
// own that requires this one (through a replace directive to the working
// tree): with only the public packages it runs an offload agent that
// answers an Initial with a Retry and a QUIC server that validates the
// client's address with the shared secret. An exported API that takes an
// internal type would not compile there. The build works offline
// (GOPROXY=off): every module comes from the cache that building this
// module filled.
func TestExternalModule(t *testing.T) {
	root := moduleRoot(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build another module: %v", err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "extmod", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/extmod\n\ngo 1.26.0\n\n" +
		"require " + module + " v0.0.0\n\n" +
		"replace " + module + " => " + root + "\n"
	for name, data := range map[string][]byte{"main.go": src, "go.mod": []byte(mod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "extmod: ok") {
		t.Fatalf("go run in a module outside this one: %v\n%s", err, out)
	}
}
