//go:build unix

package main

import (
	"os"
	"syscall"
)

// sendReloadSignal sends this process SIGHUP, which serve answers with a
// reload; it reports whether a signal was sent.
func sendReloadSignal() (bool, error) {
	return true, syscall.Kill(os.Getpid(), syscall.SIGHUP)
}
