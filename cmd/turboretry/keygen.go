package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/turboretry/turboretry/internal/fsutil"
	"github.com/turboretry/turboretry/token"
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

// writeSecretFile writes text to path with mode 0600 (fsutil.WriteFileAtomic:
// path never holds a partial or briefly readable secret); without force it
// refuses to replace an existing file.
func writeSecretFile(path, text string, force bool) error {
	err := fsutil.WriteFileAtomic(path, []byte(text), 0o600, force)
	if errors.Is(err, fsutil.ErrExists) {
		return fmt.Errorf("%s already exists; use --force to overwrite it", path)
	}
	return err
}
