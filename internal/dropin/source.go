// Package dropin measures how far TurboRetry is a drop-in replacement for
// quic-go: it copies quic-go's own programs (example/, interop/) and
// integration tests (integrationtests/self/) from the module cache into a
// temporary module, swaps quic-go's public import paths for ours, and then
// builds the programs, type-checks every test file on its own and runs the
// tests that compile, one process per test (docs/dropin.md).
//
// The temporary module is named under quic-go's path
// (github.com/quic-go/quic-go/dropin), so that quic-go's internal test
// helpers (testutils/simnet, integrationtests/tools/proxy, internal/wire,
// ...) stay real quic-go: Go lets any package below github.com/quic-go/quic-go
// import them.
package dropin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// QuicGoVersion is the quic-go release whose programs and tests are used.
const QuicGoVersion = "v0.65.0"

const (
	quicGo     = "github.com/quic-go/quic-go"
	ourModule  = "github.com/turboretry/turboretry"
	tempModule = quicGo + "/dropin"
)

// SelfDir is where quic-go's integration tests land in the temporary module.
const SelfDir = "integrationtests/self"

// copiedTrees are the directories copied from quic-go, relative to its
// module root. Test files are kept only under SelfDir.
var copiedTrees = []string{
	"example",
	"interop",
	"integrationtests/tools",
	SelfDir,
	"testutils/events",
}

// stayReal are directories below a copied tree that are not copied: they
// only use quic-go internals and stay quic-go's own packages.
var stayReal = []string{"integrationtests/tools/proxy"}

// publicPackages maps quic-go's public packages to ours. A mapping is used
// only when our package exists (see Mapping), so the suite measures each
// package as it lands.
var publicPackages = map[string]string{
	quicGo:                             ourModule + "/quic",
	quicGo + "/http3":                  ourModule + "/http3",
	quicGo + "/http3/qlog":             ourModule + "/http3/qlog",
	quicGo + "/qlog":                   ourModule + "/qlog",
	quicGo + "/qlogwriter":             ourModule + "/qlogwriter",
	quicGo + "/qlogwriter/jsontext":    ourModule + "/qlogwriter/jsontext",
	quicGo + "/quicvarint":             ourModule + "/quicvarint",
	quicGo + "/integrationtests/tools": tempModule + "/integrationtests/tools",
	quicGo + "/testutils/events":       tempModule + "/testutils/events",
	quicGo + "/interop/http09":         tempModule + "/interop/http09",
	quicGo + "/interop/utils":          tempModule + "/interop/utils",
}

// An alias is a name of a quic-go internal package that quic-go's public API
// exposes under another name: in quic-go both are the same type or value
// (quic.StreamID is an alias of protocol.StreamID, qlog.PacketNumber of
// protocol.PacketNumber). quic-go's tests mix the two names; with our own
// public types the internal name is rewritten to the public one (test files
// only; the programs get the import swap alone). Expr is a Go expression
// over the package named in Pkg.
type alias struct {
	Pkg  string // our package the expression uses
	Expr string
}

// aliases is keyed by "<internal import path>.<name>".
var aliases = map[string]alias{
	quicGo + "/internal/protocol.ConnectionID":      {ourModule + "/quic", "quic.ConnectionID"},
	quicGo + "/internal/protocol.ParseConnectionID": {ourModule + "/quic", "quic.ConnectionIDFromBytes"},
	quicGo + "/internal/protocol.StreamID":          {ourModule + "/quic", "quic.StreamID"},
	quicGo + "/internal/protocol.InvalidStreamID":   {ourModule + "/quic", "quic.StreamID(-1)"},
	quicGo + "/internal/protocol.Version":           {ourModule + "/quic", "quic.Version"},
	quicGo + "/internal/protocol.PacketNumber":      {ourModule + "/qlog", "qlog.PacketNumber"},
	quicGo + "/internal/protocol.ByteCount":         {ourModule + "/qlog", "qlog.ByteCount"},
	quicGo + "/internal/protocol.InvalidByteCount":  {ourModule + "/qlog", "qlog.ByteCount(-1)"},
	quicGo + "/internal/protocol.KeyPhaseOne":       {ourModule + "/qlog", "qlog.KeyPhaseOne"},
	quicGo + "/internal/protocol.KeyPhaseZero":      {ourModule + "/qlog", "qlog.KeyPhaseZero"},
	quicGo + "/internal/protocol.KeyPhaseBit":       {ourModule + "/qlog", "qlog.KeyPhaseBit"},
	quicGo + "/internal/qerr.ConnectionRefused":     {ourModule + "/quic", "quic.ConnectionRefused"},
	// Test knobs (hooks.go): not public in either stack, the same knob in both.
	quicGo + "/internal/handshake.SetKeyUpdateInterval": {hooksPkg, "turboretryhooks.SetKeyUpdateInterval"},
	quicGo + "/internal/wire.MaxDatagramSize":           {hooksPkg, "turboretryhooks.MaxDatagramSize"},
}

// Mapping is the import rewrite in force for one run: quic-go's public
// packages that we have, and the aliases whose target package we have.
type Mapping struct {
	Imports map[string]string
	Aliases map[string]alias
}

// NewMapping returns the mapping for the repository at repoRoot.
func NewMapping(repoRoot string) Mapping {
	m := Mapping{Imports: map[string]string{}, Aliases: map[string]alias{}}
	have := func(pkg string) bool {
		if rest, ok := strings.CutPrefix(pkg, tempModule+"/"); ok {
			return rest != ""
		}
		rel, ok := strings.CutPrefix(pkg, ourModule+"/")
		if !ok {
			return false
		}
		files, _ := filepath.Glob(filepath.Join(repoRoot, rel, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				return true
			}
		}
		return false
	}
	for from, to := range publicPackages {
		if have(to) {
			m.Imports[from] = to
		}
	}
	for k, a := range aliases {
		if have(a.Pkg) {
			m.Aliases[k] = a
		}
	}
	return m
}

// Missing lists quic-go public packages we do not provide yet.
func (m Mapping) Missing() []string {
	var out []string
	for from, to := range publicPackages {
		if _, ok := m.Imports[from]; !ok && !strings.HasPrefix(to, tempModule) {
			out = append(out, from)
		}
	}
	sort.Strings(out)
	return out
}

// QuicGoDir returns the directory of quic-go QuicGoVersion in the module
// cache, downloading it through the module proxy when it is missing.
func QuicGoDir() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", quicGo+"@"+QuicGoVersion).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", quicGo, QuicGoVersion, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", err
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", quicGo, QuicGoVersion, info.Error)
	}
	return info.Dir, nil
}

// Prepare writes the temporary module into dir (which must be empty or
// absent): quic-go's copied trees with the imports rewritten, and a go.mod
// that replaces our module with repoRoot.
func Prepare(dir, quicGoDir, repoRoot string, m Mapping) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, tree := range copiedTrees {
		src := filepath.Join(quicGoDir, tree)
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(quicGoDir, path)
			if d.IsDir() {
				for _, s := range stayReal {
					if rel == s {
						return filepath.SkipDir
					}
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			if strings.HasSuffix(path, "_test.go") && filepath.Dir(rel) != SelfDir {
				return nil
			}
			out, _, err := RewriteFile(path, m, strings.HasSuffix(path, "_test.go"), nil)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			dst := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, out, 0o644)
		})
		if err != nil {
			return err
		}
	}
	if err := writeHooks(dir); err != nil {
		return err
	}
	gomod := fmt.Sprintf(`module %s

go 1.26.0

require (
	%s %s
	%s v0.0.0
)

replace %s => %s
`, tempModule, quicGo, QuicGoVersion, ourModule, ourModule, repoRoot)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	// go.sum: ours, then quic-go's, then whatever tidy adds.
	var sum bytes.Buffer
	for _, f := range []string{filepath.Join(repoRoot, "go.sum"), filepath.Join(quicGoDir, "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		sum.Write(b)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum.Bytes(), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("go", "mod", "tidy", "-e")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod tidy: %v\n%s", err, out)
	}
	return nil
}

// RewriteFile returns the source of path with quic-go's public imports
// swapped for ours, and, in test files, quic-go internal names that alias
// public ones rewritten to the public names, except those in skip (keyed
// like aliases); it also returns the alias keys it applied.
func RewriteFile(path string, m Mapping, isTest bool, skip map[string]bool) ([]byte, []string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	applied := map[string]bool{}
	if isTest {
		var edits []string
		if src, edits, err = applyEdits(filepath.Base(path), src, skip); err != nil {
			return nil, nil, err
		}
		for _, e := range edits {
			applied[e] = true
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	names := map[string]string{} // local name -> original import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		names[importName(imp, p)] = p
	}
	needed := map[string]bool{}    // our packages the alias rewrites use
	rewritten := map[string]bool{} // internal packages whose names were rewritten
	if isTest && len(m.Aliases) > 0 {
		var rewriteErr error
		ast.Inspect(f, func(n ast.Node) bool {
			if rewriteErr != nil {
				return false
			}
			for _, slot := range exprSlots(n) {
				sel, ok := (*slot).(*ast.SelectorExpr)
				if !ok {
					continue
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok || names[id.Name] == "" {
					continue
				}
				key := names[id.Name] + "." + sel.Sel.Name
				a, ok := m.Aliases[key]
				if !ok || skip[key] {
					continue
				}
				applied[key] = true
				e, err := parser.ParseExpr(a.Expr)
				if err != nil {
					rewriteErr = err
					return false
				}
				*slot = e
				needed[a.Pkg] = true
				rewritten[names[id.Name]] = true
			}
			return true
		})
		if rewriteErr != nil {
			return nil, nil, rewriteErr
		}
	}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if to, ok := m.Imports[p]; ok {
			if name := importName(imp, p); imp.Name == nil && pathBase(to) != name {
				imp.Name = &ast.Ident{Name: name, NamePos: imp.Path.Pos()}
			}
			imp.Path.Value = strconv.Quote(to)
		}
	}
	// Add the imports the alias rewrites need, drop those left unused.
	used := usedNames(f)
	have := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		have[p] = true
	}
	for pkg := range needed {
		if !have[pkg] {
			addImport(f, pkg)
		}
	}
	removeUnused(f, used, rewritten)
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, len(applied))
	for k := range applied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return buf.Bytes(), keys, nil
}

func pathBase(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func importName(imp *ast.ImportSpec, path string) string {
	if imp.Name != nil {
		return imp.Name.Name
	}
	base := pathBase(path)
	if base == "quic-go" {
		return "quic"
	}
	if base == "proxy" && strings.HasSuffix(path, "integrationtests/tools/proxy") {
		return "quicproxy"
	}
	return base
}

// exprSlots returns pointers to the expression fields of n that may hold
// a selector to rewrite.
func exprSlots(n ast.Node) []*ast.Expr {
	switch n := n.(type) {
	case *ast.CallExpr:
		s := []*ast.Expr{&n.Fun}
		for i := range n.Args {
			s = append(s, &n.Args[i])
		}
		return s
	case *ast.CompositeLit:
		s := []*ast.Expr{&n.Type}
		for i := range n.Elts {
			s = append(s, &n.Elts[i])
		}
		return s
	case *ast.KeyValueExpr:
		return []*ast.Expr{&n.Value}
	case *ast.BinaryExpr:
		return []*ast.Expr{&n.X, &n.Y}
	case *ast.UnaryExpr:
		return []*ast.Expr{&n.X}
	case *ast.ParenExpr:
		return []*ast.Expr{&n.X}
	case *ast.StarExpr:
		return []*ast.Expr{&n.X}
	case *ast.ArrayType:
		return []*ast.Expr{&n.Elt}
	case *ast.MapType:
		return []*ast.Expr{&n.Key, &n.Value}
	case *ast.ChanType:
		return []*ast.Expr{&n.Value}
	case *ast.Ellipsis:
		return []*ast.Expr{&n.Elt}
	case *ast.IndexExpr:
		return []*ast.Expr{&n.X, &n.Index}
	case *ast.Field:
		return []*ast.Expr{&n.Type}
	case *ast.ValueSpec:
		s := []*ast.Expr{&n.Type}
		for i := range n.Values {
			s = append(s, &n.Values[i])
		}
		return s
	case *ast.AssignStmt:
		s := []*ast.Expr{}
		for i := range n.Lhs {
			s = append(s, &n.Lhs[i])
		}
		for i := range n.Rhs {
			s = append(s, &n.Rhs[i])
		}
		return s
	case *ast.ReturnStmt:
		s := []*ast.Expr{}
		for i := range n.Results {
			s = append(s, &n.Results[i])
		}
		return s
	case *ast.TypeSpec:
		return []*ast.Expr{&n.Type}
	case *ast.TypeAssertExpr:
		return []*ast.Expr{&n.Type}
	case *ast.CaseClause:
		s := []*ast.Expr{}
		for i := range n.List {
			s = append(s, &n.List[i])
		}
		return s
	case *ast.SendStmt:
		return []*ast.Expr{&n.Value}
	case *ast.IncDecStmt:
		return []*ast.Expr{&n.X}
	case *ast.ExprStmt:
		return []*ast.Expr{&n.X}
	case *ast.IfStmt:
		return []*ast.Expr{&n.Cond}
	case *ast.SwitchStmt:
		return []*ast.Expr{&n.Tag}
	case *ast.IndexListExpr:
		s := []*ast.Expr{&n.X}
		for i := range n.Indices {
			s = append(s, &n.Indices[i])
		}
		return s
	}
	return nil
}

// usedNames returns the package names that selectors in f refer to.
func usedNames(f *ast.File) map[string]bool {
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	return used
}

func addImport(f *ast.File, pkg string) {
	spec := &ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(pkg)}}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			g.Specs = append(g.Specs, spec)
			f.Imports = append(f.Imports, spec)
			return
		}
	}
	g := &ast.GenDecl{Tok: token.IMPORT, Specs: []ast.Spec{spec}}
	f.Decls = append([]ast.Decl{g}, f.Decls...)
	f.Imports = append(f.Imports, spec)
}

// removeUnused drops the imports of paths in candidates whose name no
// selector of f uses any more.
func removeUnused(f *ast.File, used map[string]bool, candidates map[string]bool) {
	var imports []*ast.ImportSpec
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		specs := g.Specs[:0]
		for _, s := range g.Specs {
			is := s.(*ast.ImportSpec)
			p, _ := strconv.Unquote(is.Path.Value)
			if candidates[p] && !used[importName(is, p)] {
				continue
			}
			specs = append(specs, s)
			imports = append(imports, is)
		}
		g.Specs = specs
	}
	f.Imports = imports
}
