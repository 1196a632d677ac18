package dropin

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	flagFull    = flag.Bool("dropin.full", false, "run every compiling test, not only testdata/ci-tests.txt (make dropin)")
	flagUpdate  = flag.Bool("dropin.update", false, "with -dropin.full: write the counts to testdata/baseline.txt")
	flagDir     = flag.String("dropin.dir", "", "build the temporary module in this directory and keep it")
	flagReport  = flag.String("dropin.report", "", "write the full report to this file")
	flagTimeout = flag.Duration("dropin.timeout", 60*time.Second, "timeout of each test")
	flagRun     = flag.String("dropin.run", "", "run only the tests matching this regexp")
)

const (
	baselineFile = "testdata/baseline.txt"
	ciTestsFile  = "testdata/ci-tests.txt"
)

// TestDropin is the quic-go compatibility suite (docs/dropin.md). By
// default (make test) it builds quic-go's five programs on our stack,
// type-checks every integration test file, builds the test binary and runs
// the tests in testdata/ci-tests.txt; it fails when a count falls below
// testdata/baseline.txt or a listed test does not pass. With -dropin.full
// (make dropin) it runs every compiling test.
func TestDropin(t *testing.T) {
	if testing.Short() {
		t.Skip("dropin: the quic-go compatibility suite builds a module of its own; skipped with -short")
	}
	start := time.Now()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	qdir, err := QuicGoDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := *flagDir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	m := NewMapping(root)
	t.Logf("quic-go packages not provided yet: %v", m.Missing())
	if err := Prepare(dir, qdir, root, m); err != nil {
		t.Fatal(err)
	}
	rep := &Report{Programs: BuildPrograms(dir)}
	rep.Files, err = CheckSelf(dir, qdir, m)
	if err != nil {
		t.Fatal(err)
	}
	var bin string
	if b := HelpersBroken(rep.Files); len(b) > 0 {
		// No test compiles; the report says why.
		for _, f := range rep.Files {
			if f.Compiles() {
				f.Errors = []string{"the shared helpers do not compile"}
			}
		}
	} else if bin, err = BuildTests(dir, rep.Files); err != nil {
		t.Fatal(err)
	}

	var only map[string]bool
	if !*flagFull {
		rep.Subset = true
		only, err = readList(ciTestsFile)
		if err != nil {
			t.Fatal(err)
		}
	}
	var match *regexp.Regexp
	if *flagRun != "" {
		rep.Subset = true
		match = regexp.MustCompile(*flagRun)
	}
	compiled := map[string]bool{}
	for _, f := range rep.Files {
		if !f.Compiles() {
			continue
		}
		for _, test := range f.Tests {
			compiled[test] = true
			if (only != nil && !only[test]) || (match != nil && !match.MatchString(test)) {
				continue
			}
			res := RunTest(bin, filepath.Join(dir, SelfDir), test, *flagTimeout)
			res.File = f.Name
			t.Logf("%s: %s (%s)", test, res.Outcome, res.Elapsed.Round(100*time.Millisecond))
			if res.Outcome != Pass && testing.Verbose() && *flagFull {
				t.Logf("%s", tail(res.Output, 40))
			}
			rep.Results = append(rep.Results, res)
		}
	}
	rep.Elapsed = time.Since(start)

	var buf bytes.Buffer
	rep.Write(&buf)
	if *flagReport != "" {
		if err := os.WriteFile(*flagReport, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	summary, _, _ := strings.Cut(buf.String(), "\n\n")
	t.Logf("\n%s", summary)

	got := rep.Baseline()
	if *flagUpdate {
		if rep.Subset {
			t.Fatal("-dropin.update needs -dropin.full and no -dropin.run")
		}
		var b bytes.Buffer
		b.WriteString("# Counts of the quic-go drop-in suite (make dropin); CI fails when one falls.\n")
		got.Write(&b)
		if err := os.WriteFile(baselineFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	base, err := ReadBaseline(baselineFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range base.Below(got) {
		t.Errorf("dropin: count fell: %s", e)
	}
	if only != nil {
		for test := range only {
			if !compiled[test] {
				t.Errorf("dropin: %s (in %s) no longer compiles", test, ciTestsFile)
			}
		}
		for _, res := range rep.Results {
			if res.Outcome != Pass {
				t.Errorf("dropin: %s (in %s): %s\n%s", res.Test, ciTestsFile, res.Outcome, tail(res.Output, 60))
			}
		}
	}
}

// readList reads test names, one a line; # starts a comment.
func readList(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			out[line] = true
		}
	}
	return out, sc.Err()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
