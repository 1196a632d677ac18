package dropin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A few of quic-go's tests turn quic-go internals to make rare behaviour
// frequent (handshake.SetKeyUpdateInterval, wire.MaxDatagramSize). Ours
// are in internal/testhook, which Go does not let the temporary module
// (named under quic-go's path) import, so Prepare writes a package into it
// that reaches them by go:linkname, and the aliases below point quic-go's
// names there. A renamed hook fails the link of the test binary, so the
// suite cannot silently run such a test on the defaults.
const hooksPkg = tempModule + "/turboretryhooks"

const hooksSource = `// Package turboretryhooks reaches TurboRetry's test hooks
// (github.com/turboretry/turboretry/internal/testhook) by go:linkname: the
// drop-in suite maps quic-go's internal knobs to them (docs/dropin.md).
// Written by internal/dropin.
package turboretryhooks

import (
	_ "unsafe" // go:linkname

	_ "github.com/turboretry/turboretry/quic" // links internal/testhook
)

// SetKeyUpdateInterval stands for quic-go's handshake.SetKeyUpdateInterval.
//
//go:linkname SetKeyUpdateInterval github.com/turboretry/turboretry/internal/testhook.SetKeyUpdateInterval
func SetKeyUpdateInterval(n uint64) (reset func())

// MaxDatagramSize stands for quic-go's wire.MaxDatagramSize (0: our default).
//
//go:linkname MaxDatagramSize github.com/turboretry/turboretry/internal/testhook.MaxDatagramFrameSize
var MaxDatagramSize uint64
`

// writeHooks writes the hooks package into the temporary module at dir.
func writeHooks(dir string) error {
	pkgDir := filepath.Join(dir, strings.TrimPrefix(hooksPkg, tempModule+"/"))
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(pkgDir, "hooks.go"), []byte(hooksSource), 0o644)
}

// A sourceEdit changes one expression of one test file where a value of a
// quic-go internal type meets one of ours and the file must keep the
// internal type for quic-go's wire package, so no alias applies: Old must
// occur exactly once in File (Prepare fails otherwise, so a new quic-go
// release cannot leave it unapplied unnoticed). Why says why the edit
// keeps the test's meaning; docs/dropin.md lists each.
type sourceEdit struct {
	File, Old, New, Why string
}

var sourceEdits = []sourceEdit{
	{
		File: "mitm_test.go",
		Old:  "require.Contains(t, vnErr.Theirs, supportedVersion)",
		New:  "require.Contains(t, vnErr.Theirs, quic.Version(supportedVersion))",
		Why: "supportedVersion is quic-go's protocol.Version (the forged packet is built with quic-go's wire); " +
			"vnErr.Theirs is our []quic.Version: the same version numbers, compared as ours",
	},
}

// editKey names an edit in the keys RewriteFile reports and skips.
func editKey(e sourceEdit) string { return "edit " + e.File + ": " + e.New }

// applyEdits returns src with the edits for the file named name applied,
// except those whose key is in skip, and the keys it applied.
func applyEdits(name string, src []byte, skip map[string]bool) ([]byte, []string, error) {
	var applied []string
	s := string(src)
	for _, e := range sourceEdits {
		if e.File != name || skip[editKey(e)] {
			continue
		}
		if n := strings.Count(s, e.Old); n != 1 {
			return nil, nil, fmt.Errorf("%s: edit expects %q once, found it %d times", name, e.Old, n)
		}
		s = strings.Replace(s, e.Old, e.New, 1)
		applied = append(applied, editKey(e))
	}
	return []byte(s), applied, nil
}
