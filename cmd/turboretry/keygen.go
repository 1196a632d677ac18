package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/turboretry/turboretry/internal/token"
)

func init() {
	register(&command{
		name:    "keygen",
		summary: "generate a root secret for tokens",
		run:     runKeygen,
	})
}

func runKeygen(_ context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("keygen", "turboretry keygen [-o FILE] [--force]\n\n"+
		"Generates a 32-byte root secret, written as 64 hex characters and a newline.\n"+
		"Without -o it is printed to stdout; with -o the file gets mode 0600.", stderr)
	out := flags.String("o", "", "write the secret to `FILE` (mode 0600) instead of stdout")
	force := flags.Bool("force", false, "overwrite FILE if it exists")
	pos, err := parseArgs(flags, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return usageError(flags, "unexpected argument %q", pos[0])
	}
	secret, err := token.GenerateSecret()
	if err != nil {
		fmt.Fprintln(stderr, "keygen:", err)
		return exitFail
	}
	text := token.FormatSecret(secret)
	if *out == "" {
		fmt.Fprint(stdout, text)
		return exitOK
	}
	if err := writeSecretFile(*out, text, *force); err != nil {
		fmt.Fprintln(stderr, "keygen:", err)
		return exitFail
	}
	return exitOK
}

// writeSecretFile writes text to path with mode 0600. The secret is written
// to a private temporary file first and then put in place, so path never
// holds a partial or briefly world-readable secret; without force, the
// final link fails rather than replace an existing file.
func writeSecretFile(path, text string, force bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".turboretry-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(text); err != nil {
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
	if force {
		return os.Rename(tmp.Name(), path)
	}
	err = os.Link(tmp.Name(), path)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; use --force to overwrite it", path)
	}
	// No hard links on this file system: create exclusively instead.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; use --force to overwrite it", path)
		}
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
