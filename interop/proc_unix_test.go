//go:build unix

package interop

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the peer in a process group of its own so that
// killPeerGroup also ends its children (Chromium's renderer, GPU and
// utility processes), which would otherwise outlive the test.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killPeerGroup(cmd) }
}

// killPeerGroup kills the process group that ownProcessGroup created; the
// group's id is the peer's pid. Nothing left to kill is not an error.
func killPeerGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
