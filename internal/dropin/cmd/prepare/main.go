// Command prepare writes the drop-in module into a directory: quic-go's
// programs (example/, interop/) and integration tests with their imports
// swapped for ours (package dropin). The interop runner's
// "quic-go-on-turboretry" endpoint builds quic-go's interop server and
// client from it. Run it from the repository:
//
//	go run ./internal/dropin/cmd/prepare -dir /tmp/dropin
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turboretry/turboretry/internal/dropin"
)

func main() {
	dir := flag.String("dir", "", "directory to write the module into (emptied first)")
	repo := flag.String("repo", ".", "the TurboRetry repository the module uses")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "prepare: -dir is required")
		os.Exit(2)
	}
	root, err := filepath.Abs(*repo)
	if err == nil {
		err = run(*dir, root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
}

func run(dir, root string) error {
	qdir, err := dropin.QuicGoDir()
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	m := dropin.NewMapping(root)
	if missing := m.Missing(); len(missing) > 0 {
		fmt.Fprintln(os.Stderr, "prepare: quic-go packages not provided yet (left as quic-go's):", missing)
	}
	return dropin.Prepare(dir, qdir, root, m)
}
