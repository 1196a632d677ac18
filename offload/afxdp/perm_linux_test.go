//go:build linux

package afxdp

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenWithoutPrivileges checks that a missing CAP_NET_RAW yields
// ErrPermission. As root the test drops the capability from the effective set
// of its own locked thread only (capabilities are per thread) and restores it.
func TestOpenWithoutPrivileges(t *testing.T) {
	if os.Geteuid() != 0 {
		if _, err := Open(1, 0, smallConfig); !errors.Is(err, ErrPermission) {
			t.Fatalf("unprivileged Open: got %v, want ErrPermission", err)
		}
		return
	}
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		runtime.UnlockOSThread()
		t.Skipf("skipping: capget: %v", err)
	}
	saved := data
	data[unix.CAP_NET_RAW/32].Effective &^= 1 << (unix.CAP_NET_RAW % 32)
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		runtime.UnlockOSThread()
		t.Skipf("skipping: capset: %v", err)
	}
	_, err := Open(1, 0, smallConfig)
	if rerr := unix.Capset(&hdr, &saved[0]); rerr == nil {
		runtime.UnlockOSThread()
	} else {
		// Leave the thread locked: the runtime discards it at goroutine exit.
		t.Errorf("restoring capabilities: %v", rerr)
	}
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("Open without CAP_NET_RAW: got %v, want ErrPermission", err)
	}
}
