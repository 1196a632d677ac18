package fileserver

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/turboretry/turboretry/token"
)

// loadOrCreateSecret returns the key ring for path, creating the secret
// file (mode 0600) when create is set and the file does not exist.
func loadOrCreateSecret(path string, create bool, log *slog.Logger) (*token.KeyRing, error) {
	kr, err := token.LoadKeyRing(path, token.DefaultRotation)
	if err == nil || !create || !errors.Is(err, fs.ErrNotExist) {
		return kr, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	s, err := token.GenerateSecret()
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(path, []byte(token.FormatSecret(s)), 0o600); err != nil {
		return nil, fmt.Errorf("writing root secret: %w", err)
	}
	log.Info("created root secret", "file", path)
	return token.LoadKeyRing(path, token.DefaultRotation)
}
