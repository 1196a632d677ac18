package datapath

import (
	"errors"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartWithoutPrivilege runs Start on a thread whose effective
// capabilities are all dropped (as a non-root process has none) and checks
// for ErrPermission with the kernel's error wrapped, and nothing left over.
// Capabilities are per thread: the goroutine stays locked to its thread,
// so the runtime discards the thread with the goroutine.
func TestStartWithoutPrivilege(t *testing.T) {
	cfg := Config{Iface: "lo", Port: 4433, KeyRing: testKeyRing(t), Deliver: func([]byte, netip.AddrPort, netip.AddrPort) {}}
	if os.Geteuid() != 0 {
		// Already unprivileged: the plain call must say so.
		_, err := Start(cfg)
		if !errors.Is(err, ErrPermission) {
			t.Fatalf("Start as non-root: %v, want ErrPermission", err)
		}
		return
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with us
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
		dp, err := Start(cfg)
		if dp != nil {
			_ = dp.Close()
			errc <- errors.New("Start succeeded without capabilities")
			return
		}
		if !errors.Is(err, ErrPermission) || !errors.Is(err, ErrLoad) || !errors.Is(err, unix.EPERM) {
			errc <- errors.New("Start without capabilities: " + err.Error() + "; want ErrPermission wrapping ErrLoad and EPERM")
			return
		}
		t.Logf("Start without capabilities: %v", err)
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
