package dropin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Programs are quic-go's programs the suite builds, by their package
// directory in the temporary module.
var Programs = []string{
	"example/echo",
	"example",
	"example/client",
	"interop/server",
	"interop/client",
}

// A Program is one of Programs and whether it built.
type Program struct {
	Dir    string
	Errors []string
}

// BuildPrograms builds each program of Programs into dir/bin.
func BuildPrograms(dir string) []*Program {
	var out []*Program
	for _, p := range Programs {
		name := strings.ReplaceAll(p, "/", "-")
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", name), "./"+p)
		cmd.Dir = dir
		res := &Program{Dir: p}
		if b, err := cmd.CombinedOutput(); err != nil {
			res.Errors = errorLines(string(b), 20)
			if len(res.Errors) == 0 {
				res.Errors = []string{err.Error()}
			}
		}
		out = append(out, res)
	}
	return out
}

func errorLines(s string, max int) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
		if len(out) == max {
			break
		}
	}
	return out
}

// BuildTests moves the test files that do not compile out of the package
// (to dir/broken/) and builds the test binary of the rest.
func BuildTests(dir string, files []*File) (string, error) {
	selfDir := filepath.Join(dir, SelfDir)
	broken := filepath.Join(dir, "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		if !f.Compiles() {
			if err := os.Rename(filepath.Join(selfDir, f.Name), filepath.Join(broken, f.Name)); err != nil {
				return "", err
			}
		}
	}
	bin := filepath.Join(dir, "bin", "self.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, "./"+SelfDir)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go test -c: %v\n%s", err, b)
	}
	return bin, nil
}

// Outcome is how one test ended.
type Outcome string

// The outcomes of a test.
const (
	Pass      Outcome = "pass"
	Fail      Outcome = "fail"
	Panic     Outcome = "panic"
	Hang      Outcome = "hang" // timed out, or a synctest bubble deadlocked
	Skip      Outcome = "skip"
	NoCompile Outcome = "nocompile"
)

// A Result is one test's outcome.
type Result struct {
	Test    string
	File    string
	Outcome Outcome
	Elapsed time.Duration
	Detail  []string // the first lines that say why it did not pass
	Output  string
}

// RunTest runs one test of the binary in its own process, with the
// test's own timeout and a hard limit slightly above it.
func RunTest(bin, dir, test string, timeout time.Duration) *Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"-test.run", "^"+regexp.QuoteMeta(test)+"$",
		"-test.v", "-test.count=1",
		"-test.timeout", timeout.String())
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	r := &Result{Test: test, Elapsed: time.Since(start), Output: out.String()}
	r.Outcome, r.Detail = classify(r.Output, err, ctx.Err() != nil)
	return r
}

func classify(out string, err error, killed bool) (Outcome, []string) {
	switch {
	case killed || strings.Contains(out, "panic: test timed out"):
		return Hang, matchLines(out, []string{"panic: test timed out", "--- FAIL"}, 3)
	case strings.Contains(out, "deadlock: ") || strings.Contains(out, "all goroutines are asleep"):
		return Hang, matchLines(out, []string{"deadlock", "asleep", "--- FAIL"}, 3)
	case strings.Contains(out, "\npanic: ") || strings.HasPrefix(out, "panic: ") || strings.Contains(out, "fatal error: "):
		return Panic, matchLines(out, []string{"panic: ", "fatal error: ", ".go:"}, 6)
	case err == nil && strings.Contains(out, "--- SKIP") && !strings.Contains(out, "--- PASS"):
		return Skip, matchLines(out, []string{"--- SKIP", "_test.go"}, 3)
	case err == nil:
		return Pass, nil
	}
	return Fail, matchLines(out, []string{"Error:", "Error Trace:", "_test.go:", "--- FAIL", "Messages:"}, 8)
}

// matchLines returns up to max lines of out that contain one of keys.
func matchLines(out string, keys []string, max int) []string {
	var res []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		for _, k := range keys {
			if strings.Contains(t, k) {
				if len(t) > 300 {
					t = t[:300] + "..."
				}
				res = append(res, t)
				break
			}
		}
		if len(res) == max {
			break
		}
	}
	return res
}
