package dropin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// helperFiles are the test files of integrationtests/self that the others
// share; every test file is checked together with them.
var helperFiles = map[string]bool{
	"self_test.go":              true,
	"simnet_helper_test.go":     true,
	"self_suite_linux_test.go":  true,
	"self_suite_others_test.go": true,
}

// A File is one test file of quic-go's integration tests and what
// type-checking it found.
type File struct {
	Name   string
	Tests  []string // the Test functions it declares
	Errors []string // type errors; none when it compiles
	// Round is the checking round that dropped the file: files whose
	// errors only appear once another file was dropped (they used its
	// declarations) have a higher round.
	Round int
	// Aliases are the quic-go internal names rewritten to their public
	// aliases in this file; Unaliased those left as they are because the
	// file uses them with quic-go internals (wire, testutils).
	Aliases, Unaliased []string
}

// Compiles reports whether the file type-checks with the shared helpers.
func (f *File) Compiles() bool { return len(f.Errors) == 0 }

// CheckSelf type-checks the test files of the temporary module in dir:
// all files together first; the files with errors are dropped and the rest
// checked again until what is left compiles, so a file is reported
// broken only for its own errors (or for needing a dropped file's
// declarations), and one missing symbol does not hide the rest.
//
// Internal names with a public alias (see aliases) are rewritten where
// that makes the file compile: for a file that does not compile with all
// of them rewritten, each is tried left alone (quic-go's tests also pass
// such values to quic-go's internal wire and testutils packages), and the
// variant with the fewest errors is kept. quicGoDir holds the originals.
func CheckSelf(dir, quicGoDir string, m Mapping) ([]*File, error) {
	selfDir := filepath.Join(dir, SelfDir)
	entries, err := os.ReadDir(selfDir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	var files []*File
	imports := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(selfDir, name); err != nil || !ok {
			continue
		}
		af, err := parser.ParseFile(fset, filepath.Join(selfDir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		parsed[name] = af
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports[p] = true
		}
		f := &File{Name: name, Tests: testFuncs(af)}
		if _, f.Aliases, err = RewriteFile(filepath.Join(quicGoDir, SelfDir, name), m, true, nil); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	// Every package a variant may import: the internal packages the
	// aliases replace stay importable.
	for k := range m.Aliases {
		imports[k[:strings.LastIndex(k, ".")]] = true
	}
	for _, a := range m.Aliases {
		imports[a.Pkg] = true
	}
	exports, err := exportData(dir, imports)
	if err != nil {
		return nil, err
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		x, ok := exports[path]
		if !ok || x.Export == "" {
			msg := "no export data"
			if ok && x.Err != "" {
				msg = x.Err
			}
			return nil, fmt.Errorf("%s: %s", path, msg)
		}
		return os.Open(x.Export)
	})
	check := func(names []string) map[string][]string {
		afs := make([]*ast.File, 0, len(names))
		for _, n := range names {
			afs = append(afs, parsed[n])
		}
		errs := map[string][]string{}
		conf := types.Config{
			Importer:  imp,
			GoVersion: "go1.26",
			Error: func(err error) {
				te, ok := err.(types.Error)
				if !ok {
					return
				}
				pos := te.Fset.Position(te.Pos)
				name := filepath.Base(pos.Filename)
				if len(errs[name]) < 50 {
					errs[name] = append(errs[name], fmt.Sprintf("%s:%d: %s", name, pos.Line, te.Msg))
				}
			},
		}
		_, _ = conf.Check("self_test", fset, afs, nil)
		return errs
	}
	converge := func() {
		live := map[string]bool{}
		for _, f := range files {
			live[f.Name] = true
			f.Errors, f.Round = nil, 0
		}
		for round := 1; ; round++ {
			var names []string
			for _, f := range files {
				if live[f.Name] {
					names = append(names, f.Name)
				}
			}
			errs := check(names)
			if len(errs) == 0 {
				return
			}
			for _, f := range files {
				if e := errs[f.Name]; len(e) > 0 && live[f.Name] {
					f.Errors, f.Round = e, round
					live[f.Name] = false
				}
			}
			if anyHelperBroken(files) {
				return
			}
		}
	}
	converge()
	if anyHelperBroken(files) {
		return files, nil
	}
	var helpers []string
	for _, f := range files {
		if helperFiles[f.Name] {
			helpers = append(helpers, f.Name)
		}
	}
	changed := false
	for _, f := range files {
		if f.Compiles() || helperFiles[f.Name] || len(f.Aliases) == 0 {
			continue
		}
		orig := filepath.Join(quicGoDir, SelfDir, f.Name)
		variant := func(skip map[string]bool) (*ast.File, []byte, int, error) {
			src, _, err := RewriteFile(orig, m, true, skip)
			if err != nil {
				return nil, nil, 0, err
			}
			af, err := parser.ParseFile(fset, filepath.Join(selfDir, f.Name), src, parser.ParseComments)
			if err != nil {
				return nil, nil, 0, err
			}
			saved := parsed[f.Name]
			parsed[f.Name] = af
			n := len(check(append(slices.Clone(helpers), f.Name))[f.Name])
			parsed[f.Name] = saved
			return af, src, n, nil
		}
		skip := map[string]bool{}
		_, _, best, err := variant(skip)
		if err != nil {
			return nil, err
		}
		for _, a := range f.Aliases {
			skip[a] = true
			af, src, n, err := variant(skip)
			if err != nil {
				return nil, err
			}
			if n >= best {
				delete(skip, a)
				continue
			}
			best = n
			parsed[f.Name] = af
			if err := os.WriteFile(filepath.Join(selfDir, f.Name), src, 0o644); err != nil {
				return nil, err
			}
			changed = true
		}
		var applied []string
		for _, a := range f.Aliases {
			if skip[a] {
				f.Unaliased = append(f.Unaliased, a)
			} else {
				applied = append(applied, a)
			}
		}
		f.Aliases = applied
	}
	if changed {
		converge()
	}
	return files, nil
}

func anyHelperBroken(files []*File) bool {
	for _, f := range files {
		if helperFiles[f.Name] && !f.Compiles() {
			return true
		}
	}
	return false
}

// HelpersBroken returns the shared helper files that do not compile (then
// no test compiles).
func HelpersBroken(files []*File) []*File {
	var out []*File
	for _, f := range files {
		if helperFiles[f.Name] && !f.Compiles() {
			out = append(out, f)
		}
	}
	return out
}

func testFuncs(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil {
			continue
		}
		n := fd.Name.Name
		if strings.HasPrefix(n, "Test") && n != "TestMain" {
			out = append(out, n)
		}
	}
	return out
}

type export struct {
	Export string
	Err    string
}

// exportData compiles the packages the test files import (and their
// dependencies) and returns where their export data lies.
func exportData(dir string, imports map[string]bool) (map[string]export, error) {
	args := []string{"list", "-e", "-export", "-deps", "-json=ImportPath,Export,Error,DepsErrors"}
	var pkgs []string
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	res := map[string]export{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Export     string
			Error      *struct{ Err string }
			DepsErrors []struct{ Err string }
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		x := export{Export: p.Export}
		if p.Error != nil {
			x.Err = p.Error.Err
		} else if len(p.DepsErrors) > 0 {
			x.Err = p.DepsErrors[0].Err
		}
		res[p.ImportPath] = x
	}
	return res, nil
}
