//go:build linux

package netnstest

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Unprivileged runs fn on an OS thread whose effective capabilities are
// all dropped, as a non-root process has none, and returns fn's error.
// Capabilities are per thread: the thread stays locked to the goroutine
// and the runtime discards it afterwards, so no other goroutine inherits
// the dropped set. System calls fn makes on that goroutine see no
// privilege.
func Unprivileged(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		data[0].Effective, data[1].Effective = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}
