package token

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// SecretLen is the size of the root secret.
const SecretLen = 32

// maxSecretFile bounds how much of a secret file is read: the longest
// accepted form is 64 hex characters and "\r\n".
const maxSecretFile = 2*SecretLen + 2

// GenerateSecret returns a new random root secret.
func GenerateSecret() ([]byte, error) {
	s := make([]byte, SecretLen)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("token: generating secret: %w", err)
	}
	return s, nil
}

// FormatSecret returns the key file form of a secret: 64 lower-case hex
// characters and a newline.
func FormatSecret(secret []byte) string {
	return hex.EncodeToString(secret) + "\n"
}

// ParseSecret decodes the contents of a key file: exactly 32 raw bytes, or
// 64 hex characters optionally followed by one newline ("\n" or "\r\n").
// Anything else is refused rather than guessed at, since a mangled secret
// would silently split host and agent into different key schedules.
func ParseSecret(data []byte) ([]byte, error) {
	if len(data) == SecretLen {
		return append([]byte(nil), data...), nil
	}
	h := data
	switch {
	case len(h) == 2*SecretLen+1 && h[len(h)-1] == '\n':
		h = h[:len(h)-1]
	case len(h) == 2*SecretLen+2 && h[len(h)-2] == '\r' && h[len(h)-1] == '\n':
		h = h[:len(h)-2]
	}
	if len(h) != 2*SecretLen {
		return nil, fmt.Errorf("token: root secret must be 64 hex characters (optionally followed by a newline) or 32 raw bytes, got %d bytes", len(data))
	}
	s := make([]byte, SecretLen)
	if _, err := hex.Decode(s, h); err != nil {
		return nil, fmt.Errorf("token: root secret is 64 characters but not hex: %v", err)
	}
	return s, nil
}

// ReadSecretFile reads and parses a key file. It refuses a file that other
// users can read: whoever can read the root secret can mint tokens that
// bypass address validation.
func ReadSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("token: root secret %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o004 != 0 {
		return nil, fmt.Errorf("token: root secret %s is world-readable (mode %04o): anyone who can read it can mint tokens that bypass address validation; run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, fmt.Errorf("token: reading %s: %w", path, err)
	}
	if len(data) > maxSecretFile {
		return nil, fmt.Errorf("token: root secret %s is too long: want 64 hex characters or 32 raw bytes", path)
	}
	s, err := ParseSecret(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return s, nil
}
