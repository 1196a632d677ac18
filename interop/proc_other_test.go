//go:build !unix

package interop

import "os/exec"

// ownProcessGroup does nothing where process groups do not exist; the
// peers these tests run are Debian packages anyway.
func ownProcessGroup(*exec.Cmd) {}

// killPeerGroup kills the peer itself.
func killPeerGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
