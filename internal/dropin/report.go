package dropin

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A Report is one run of the suite.
type Report struct {
	Programs []*Program
	Files    []*File
	Results  []*Result // the tests run (all compiling ones, or a subset)
	Subset   bool      // only a subset of the compiling tests ran
	Elapsed  time.Duration
}

// Counts are the figures a baseline holds.
type Counts struct {
	ProgramsBuilt int
	FilesCompiled int
	TestsCompiled int
	TestsRun      int
	ByOutcome     map[Outcome]int
}

// Counts sums up the report.
func (r *Report) Counts() Counts {
	c := Counts{ByOutcome: map[Outcome]int{}}
	for _, p := range r.Programs {
		if len(p.Errors) == 0 {
			c.ProgramsBuilt++
		}
	}
	for _, f := range r.Files {
		if f.Compiles() {
			if len(f.Tests) > 0 {
				c.FilesCompiled++
			}
			c.TestsCompiled += len(f.Tests)
		}
	}
	for _, res := range r.Results {
		c.TestsRun++
		c.ByOutcome[res.Outcome]++
	}
	return c
}

func (r *Report) totalTests() (files, tests int) {
	for _, f := range r.Files {
		if len(f.Tests) > 0 {
			files++
		}
		tests += len(f.Tests)
	}
	return files, tests
}

// Write writes the report as text: the summary first, then one line per
// program, file and test, then the missing API by the files needing it.
func (r *Report) Write(w io.Writer) {
	c := r.Counts()
	nfiles, ntests := r.totalTests()
	fmt.Fprintf(w, "# quic-go %s drop-in suite (%s)\n", QuicGoVersion, r.Elapsed.Round(time.Second))
	fmt.Fprintf(w, "programs built: %d/%d\n", c.ProgramsBuilt, len(r.Programs))
	fmt.Fprintf(w, "test files compiled: %d/%d\n", c.FilesCompiled, nfiles)
	fmt.Fprintf(w, "tests compiled: %d/%d\n", c.TestsCompiled, ntests)
	what := "tests run"
	if r.Subset {
		what = "tests run (subset)"
	}
	fmt.Fprintf(w, "%s: %d: %d pass, %d fail, %d panic, %d hang, %d skip\n", what, c.TestsRun,
		c.ByOutcome[Pass], c.ByOutcome[Fail], c.ByOutcome[Panic], c.ByOutcome[Hang], c.ByOutcome[Skip])
	fmt.Fprintln(w)
	for _, p := range r.Programs {
		if len(p.Errors) == 0 {
			fmt.Fprintf(w, "program %s: built\n", p.Dir)
			continue
		}
		fmt.Fprintf(w, "program %s: FAILED\n", p.Dir)
		for _, e := range first(p.Errors, 8) {
			fmt.Fprintf(w, "    %s\n", e)
		}
	}
	fmt.Fprintln(w)
	for _, f := range r.Files {
		var notes string
		var aliased, edited []string
		for _, a := range f.Aliases {
			if strings.HasPrefix(a, "edit ") {
				edited = append(edited, strings.TrimPrefix(a, "edit "+f.Name+": "))
			} else {
				aliased = append(aliased, a)
			}
		}
		if len(aliased) > 0 {
			notes += " aliases: " + shortNames(aliased)
		}
		if len(edited) > 0 {
			notes += " edited: " + strings.Join(edited, "; ")
		}
		if len(f.Unaliased) > 0 {
			notes += " kept internal: " + shortNames(f.Unaliased)
		}
		if f.Compiles() {
			fmt.Fprintf(w, "file %s: compiles (%d tests)%s\n", f.Name, len(f.Tests), notes)
			continue
		}
		fmt.Fprintf(w, "file %s: does not compile (%d tests, round %d)%s\n", f.Name, len(f.Tests), f.Round, notes)
		for _, e := range first(f.Errors, 6) {
			fmt.Fprintf(w, "    %s\n", e)
		}
	}
	fmt.Fprintln(w)
	for _, res := range r.Results {
		fmt.Fprintf(w, "test %s (%s): %s %s\n", res.Test, res.File, res.Outcome, res.Elapsed.Round(100*time.Millisecond))
		for _, d := range res.Detail {
			fmt.Fprintf(w, "    %s\n", d)
		}
	}
	missing := r.MissingAPI()
	if len(missing) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "missing API, by files that need it:")
		for _, m := range missing {
			fmt.Fprintf(w, "    %-60s %d (%s)\n", m.Symbol, len(m.Files), strings.Join(m.Files, " "))
		}
	}
}

// shortNames lists alias keys without quic-go's module path.
func shortNames(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimPrefix(k, quicGo+"/internal/")
	}
	return strings.Join(out, ", ")
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// A Missing is an API the broken files use that we lack.
type Missing struct {
	Symbol string
	Files  []string
}

var (
	undefinedRe = regexp.MustCompile(`undefined: ([A-Za-z0-9_]+\.[A-Za-z0-9_]+)`)
	noFieldRe   = regexp.MustCompile(`undefined \(type (\S+) has no field or method ([A-Za-z0-9_]+)`)
	unknownRe   = regexp.MustCompile(`unknown field ([A-Za-z0-9_]+) in struct literal of type (\S+)`)
)

// MissingAPI extracts the undefined names and methods from the type
// errors of the files that do not compile.
func (r *Report) MissingAPI() []Missing {
	byName := map[string]map[string]bool{}
	for _, f := range r.Files {
		for _, e := range f.Errors {
			var sym string
			if m := undefinedRe.FindStringSubmatch(e); m != nil {
				sym = m[1]
			} else if m := noFieldRe.FindStringSubmatch(e); m != nil {
				sym = strings.TrimPrefix(m[1], "*") + "." + m[2]
			} else if m := unknownRe.FindStringSubmatch(e); m != nil {
				sym = strings.TrimPrefix(m[2], "*") + "." + m[1]
			}
			sym = strings.NewReplacer(`"github.com/turboretry/turboretry/`, "", `".`, ".").Replace(sym)
			if sym == "" {
				continue
			}
			if byName[sym] == nil {
				byName[sym] = map[string]bool{}
			}
			byName[sym][f.Name] = true
		}
	}
	var out []Missing
	for sym, files := range byName {
		m := Missing{Symbol: sym}
		for f := range files {
			m.Files = append(m.Files, f)
		}
		sort.Strings(m.Files)
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].Files) != len(out[j].Files) {
			return len(out[i].Files) > len(out[j].Files)
		}
		return out[i].Symbol < out[j].Symbol
	})
	return out
}

// A Baseline holds the counts the suite must not fall below.
type Baseline map[string]int

// Baseline keys.
const (
	KeyPrograms      = "programs_built"
	KeyFiles         = "test_files_compiled"
	KeyTestsCompiled = "tests_compiled"
	KeyTestsPassed   = "tests_passed" // full runs only
)

// ReadBaseline reads "key value" lines; # starts a comment.
func ReadBaseline(path string) (Baseline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := Baseline{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		b[k] = n
	}
	return b, sc.Err()
}

// Baseline returns the report's counts as a baseline.
func (r *Report) Baseline() Baseline {
	c := r.Counts()
	b := Baseline{KeyPrograms: c.ProgramsBuilt, KeyFiles: c.FilesCompiled, KeyTestsCompiled: c.TestsCompiled}
	if !r.Subset {
		b[KeyTestsPassed] = c.ByOutcome[Pass]
	}
	return b
}

// Below lists the counts of got that fall below b.
func (b Baseline) Below(got Baseline) []string {
	var out []string
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		if ok && g < b[k] {
			out = append(out, fmt.Sprintf("%s: %d, baseline %d", k, g, b[k]))
		}
	}
	return out
}

// Write writes b in ReadBaseline's format.
func (b Baseline) Write(w io.Writer) {
	for _, k := range []string{KeyPrograms, KeyFiles, KeyTestsCompiled, KeyTestsPassed} {
		if v, ok := b[k]; ok {
			fmt.Fprintf(w, "%s %d\n", k, v)
		}
	}
}
