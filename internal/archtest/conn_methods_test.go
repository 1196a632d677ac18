package archtest

import (
	"go/ast"
	"go/parser"
	"path/filepath"
	"sort"
	"testing"
)

// maxConnMethods bounds the method set of *quic.Conn (exported and
// unexported). The connection's logic lives on its state groups
// (docs/architecture.md, "Inside a quic.Conn"); a method that mostly
// changes one group belongs to that group's type, taking what else it
// needs as arguments. *Conn keeps the event loop, the frame dispatch, the
// API and what coordinates several groups.
const maxConnMethods = 120

// TestConnMethodBudget fails when *quic.Conn has more than maxConnMethods
// methods, counted over the non-test files of package quic.
func TestConnMethodBudget(t *testing.T) {
	perFile := map[string]int{}
	total := 0
	for _, f := range parseModule(t, parser.SkipObjectResolution) {
		if f.pkg != "quic" || f.test {
			continue
		}
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			recv := fd.Recv.List[0].Type
			if st, ok := recv.(*ast.StarExpr); ok {
				recv = st.X
			}
			if id, ok := recv.(*ast.Ident); ok && id.Name == "Conn" {
				perFile[filepath.Base(f.name)]++
				total++
			}
		}
	}
	if total < 20 {
		t.Fatalf("found only %d methods of quic.Conn: wrong package?", total)
	}
	files := make([]string, 0, len(perFile))
	for name := range perFile {
		files = append(files, name)
	}
	sort.Slice(files, func(i, j int) bool { return perFile[files[i]] > perFile[files[j]] })
	for _, name := range files {
		t.Logf("%3d %s", perFile[name], name)
	}
	t.Logf("quic.Conn has %d methods (at most %d)", total, maxConnMethods)
	if total > maxConnMethods {
		t.Errorf("quic.Conn has %d methods, more than %d: move the logic onto the state it changes (docs/architecture.md)", total, maxConnMethods)
	}
}
