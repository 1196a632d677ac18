package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/turboretry/turboretry"

// tier names the layers of docs/architecture.md, lowest first.
type tier int

const (
	tierBase        tier = iota // internal/*, token: the sans-IO parts and the token format
	tierQUIC                    // quic and the quic-go-named packages beside it: qlog, qlogwriter, quicvarint
	tierHTTP3                   // http3
	tierOffload                 // offload/* but host: agent, fast path, datapath, split agent
	tierOffloadHost             // offload/host: the one offload package that knows quic
	tierApp                     // app/*: composition roots (what serve runs)
	tierTop                     // cmd/*, interop, integrationtests/*: programs, the interop harness and the end-to-end suites
)

var tierNames = [...]string{"internal/token", "quic", "http3", "offload", "offload/host", "app", "cmd/interop"}

func (t tier) String() string { return tierNames[t] }

// tierOf returns the tier of a package path relative to the module root.
func tierOf(rel string) (tier, bool) {
	first, _, _ := strings.Cut(rel, "/")
	switch {
	case first == "internal" || first == "token" || first == "quiclb":
		return tierBase, true
	case first == "quic" || first == "qlog" || first == "qlogwriter" || first == "quicvarint":
		return tierQUIC, true
	case first == "http3":
		return tierHTTP3, true
	case rel == "offload/host" || strings.HasPrefix(rel, "offload/host/"):
		return tierOffloadHost, true
	case first == "offload":
		return tierOffload, true
	case first == "app":
		return tierApp, true
	case first == "cmd" || first == "interop" || first == "integrationtests":
		return tierTop, true
	}
	return 0, false
}

// mayImport says whether a package of tier from may import one of tier to.
// The offload core sits beside the QUIC stack, not above it: it takes
// datagrams and connection IDs, never a quic type, so that the agent runs
// where no QUIC stack does (a DPU's Arm cores).
func mayImport(from, to tier) bool {
	switch from {
	case tierBase:
		return to == tierBase
	case tierQUIC:
		return to <= tierQUIC
	case tierHTTP3:
		return to <= tierHTTP3
	case tierOffload:
		return to == tierBase || to == tierOffload
	case tierOffloadHost:
		return to == tierBase || to == tierQUIC || to == tierOffload || to == tierOffloadHost
	case tierApp:
		return to <= tierApp
	case tierTop:
		return true
	}
	return false
}

// forbiddenModules may appear in test files only.
var forbiddenModules = []string{"github.com/quic-go/quic-go"}

// appOnlyModules may be imported by the app tier and above only: the
// libraries expose Stats() snapshots and take no metrics registry.
var appOnlyModules = []string{"github.com/prometheus/"}

// sourceFile is one parsed Go file of the module.
type sourceFile struct {
	pkg  string // package path relative to the module root
	name string // file path relative to the module root
	test bool
	ast  *ast.File
}

// moduleRoot is two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	return root
}

// parseModule parses every Go file of the module, whatever its build
// constraints, so that the imports of every platform are checked. It
// skips testdata, hidden directories and nested modules.
func parseModule(t *testing.T, mode parser.Mode) []sourceFile {
	t.Helper()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var files []sourceFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, mode)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		files = append(files, sourceFile{pkg: path.Dir(rel), name: rel, test: strings.HasSuffix(p, "_test.go"), ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("parsed only %d files under %s: wrong root?", len(files), root)
	}
	return files
}

func importPath(s *ast.ImportSpec) string {
	p, _ := strconv.Unquote(s.Path.Value)
	return p
}

// TestImportTiers fails when a non-test import runs from a tier to one it
// may not use (docs/architecture.md, "Layers"), when a package is in no
// tier, when a test-only module appears in a non-test import, or when a
// library below the app tier imports the Prometheus client.
func TestImportTiers(t *testing.T) {
	checked := 0
	for _, f := range parseModule(t, parser.ImportsOnly) {
		if f.test {
			continue
		}
		from, ok := tierOf(f.pkg)
		if !ok {
			t.Errorf("%s: package %s is in no tier; add it to docs/architecture.md and tierOf", f.name, f.pkg)
			continue
		}
		for _, imp := range f.ast.Imports {
			p := importPath(imp)
			for _, m := range forbiddenModules {
				if p == m || strings.HasPrefix(p, m+"/") {
					t.Errorf("%s imports %s: %s is for tests only", f.name, p, m)
				}
			}
			for _, m := range appOnlyModules {
				if strings.HasPrefix(p, m) && from < tierApp {
					t.Errorf("%s (tier %v) imports %s: only the app tier and above may (libraries expose Stats snapshots)", f.name, from, p)
				}
			}
			rel, ours := strings.CutPrefix(p, module+"/")
			if !ours {
				continue
			}
			to, ok := tierOf(rel)
			if !ok {
				t.Errorf("%s imports %s, which is in no tier", f.name, p)
				continue
			}
			checked++
			if !mayImport(from, to) {
				t.Errorf("%s (tier %v) imports %s (tier %v): the import runs the wrong way", f.name, from, p, to)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d imports of this module", checked)
	}
}

// TestTierRules pins the rules themselves, so that loosening one is a
// visible change.
func TestTierRules(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"quic", "internal/wire", true},
		{"quic", "token", true},
		{"internal/wire", "quic", false},
		{"token", "quic", false},
		{"token", "internal/tlskdf", true},
		{"http3", "quic", true},
		{"quic", "http3", false},
		{"quic", "qlog", true},
		{"qlog", "quic/quictype", true},
		{"internal/wire", "quicvarint", false},
		{"qlogwriter", "http3", false},
		{"offload/agent", "token", true},
		{"offload/agent", "quic", false},
		{"offload/split", "http3", false},
		{"offload/datapath", "offload/host", false},
		{"offload/host", "quic", true},
		{"offload/host", "http3", false},
		{"offload/host", "offload/datapath", true},
		{"offload/host", "app/fileserver", false},
		{"app/fileserver", "offload/host", true},
		{"app/fileserver", "http3", true},
		{"app/fileserver", "cmd/turboretry", false},
		{"http3", "app/fileserver", false},
		{"internal/metrics", "offload/agent", false},
		{"cmd/turboretry", "app/fileserver", true},
		{"integrationtests/abuse", "app/fileserver", true},
		{"app/fileserver", "integrationtests/abuse", false},
	} {
		from, ok1 := tierOf(tc.from)
		to, ok2 := tierOf(tc.to)
		if !ok1 || !ok2 {
			t.Fatalf("%s or %s is in no tier", tc.from, tc.to)
		}
		if got := mayImport(from, to); got != tc.ok {
			t.Errorf("%s -> %s allowed = %v, want %v", tc.from, tc.to, got, tc.ok)
		}
	}
}

// TestTiersListed: every package directory of the module appears in
// README.md's layout table or under a listed parent, so the map of the
// tree stays true.
func TestTiersListed(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{}
	for _, f := range parseModule(t, parser.PackageClauseOnly) {
		if !f.test {
			pkgs[f.pkg] = true
		}
	}
	var missing []string
	for p := range pkgs {
		if !strings.Contains(string(readme), "`"+p+"/`") && !strings.Contains(string(readme), "`"+path.Dir(p)+"/`") {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("packages missing from README.md's layout table: %v", missing)
	}
}

// internalRefs returns the selector expressions in n that name a
// package whose path has an internal/ element, by its import name.
func internalRefs(n ast.Node, internal map[string]string) []string {
	var refs []string
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // a body, not a signature
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				if p, ok := internal[id.Name]; ok {
					refs = append(refs, p+"."+n.Sel.Name)
				}
			}
		}
		return true
	})
	return refs
}

// exportedTypeParts returns the parts of a type expression that other
// packages see: for a struct its exported and embedded fields, for an
// interface its exported and embedded methods, otherwise all of it.
func exportedTypeParts(e ast.Expr) []ast.Node {
	var fields *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		fields = e.Fields
	case *ast.InterfaceType:
		fields = e.Methods
	default:
		return []ast.Node{e}
	}
	var out []ast.Node
	for _, f := range fields.List {
		visible := len(f.Names) == 0 // embedded
		for _, n := range f.Names {
			visible = visible || n.IsExported()
		}
		if visible {
			out = append(out, f.Type)
		}
	}
	return out
}

// TestNoInternalTypesInExportedAPI: no exported declaration of a package
// outside internal/ (commands aside) names a type of an internal package in
// what other modules see: function and method signatures, exported struct
// fields, interface methods, declared types of exported variables and
// constants, defined types. Another module could not name such a type, so
// it could not fill the field or implement the interface. Type aliases are
// the way to re-export one and are allowed.
func TestNoInternalTypesInExportedAPI(t *testing.T) {
	checked := 0
	for _, f := range parseModule(t, parser.SkipObjectResolution) {
		if f.test || f.ast.Name.Name == "main" || strings.HasPrefix(f.pkg, "internal/") || strings.Contains(f.pkg, "/internal/") {
			continue
		}
		internal := map[string]string{}
		for _, imp := range f.ast.Imports {
			p := importPath(imp)
			if !strings.Contains("/"+p+"/", "/internal/") {
				continue
			}
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			internal[name] = p
		}
		if len(internal) == 0 {
			continue
		}
		report := func(what string, n ast.Node) {
			checked++
			for _, r := range internalRefs(n, internal) {
				t.Errorf("%s: %s exposes %s", f.name, what, r)
			}
		}
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if st, ok := recv.(*ast.StarExpr); ok {
						recv = st.X
					}
					if ix, ok := recv.(*ast.IndexExpr); ok {
						recv = ix.X
					}
					if id, ok := recv.(*ast.Ident); !ok || !id.IsExported() {
						continue // a method of an unexported type in this file is not API
					}
				}
				report("func "+d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() || s.Assign.IsValid() {
							continue
						}
						for _, part := range exportedTypeParts(s.Type) {
							report("type "+s.Name.Name, part)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && s.Type != nil {
								report(d.Tok.String()+" "+n.Name, s.Type)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("checked %d exported declarations in files that import internal packages", checked)
	if checked < 20 {
		t.Fatalf("checked only %d exported declarations", checked)
	}
}
