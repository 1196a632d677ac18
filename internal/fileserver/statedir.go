package fileserver

import (
	"errors"
	"os"
	"path/filepath"
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

// writeFileAtomic writes data to path with the given mode through a
// temporary file in the same directory, so that a crash never leaves a
// truncated file and a private file is never briefly readable by others.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".turboretry-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
