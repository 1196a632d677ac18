package fileserver

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/turboretry/turboretry/internal/fsutil"
)

// Files kept in the state directory.
const (
	stateCertFile   = "cert.pem"
	stateKeyFile    = "key.pem"
	stateSecretFile = "secret.key"
)

// DefaultStateDir returns $XDG_STATE_HOME/turboretry, or
// ~/.local/state/turboretry when XDG_STATE_HOME is unset or relative (the
// XDG specification says to ignore relative values).
func DefaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "turboretry"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("no state directory: neither XDG_STATE_HOME nor HOME is set; use --state-dir")
	}
	return filepath.Join(home, ".local", "state", "turboretry"), nil
}

// writeFileAtomic writes data to path with the given mode, replacing it
// (fsutil.WriteFileAtomic: never truncated, never briefly readable).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return fsutil.WriteFileAtomic(path, data, perm, true)
}
