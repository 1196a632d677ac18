package datapath

import (
	"errors"
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// TestStartWithoutPrivilege runs Start on a thread whose effective
// capabilities are all dropped (as a non-root process has none) and checks
// for ErrPermission with the kernel's error wrapped, and nothing left over.
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
	err := netnstest.Unprivileged(func() error {
		dp, err := Start(cfg)
		if dp != nil {
			_ = dp.Close()
			return errors.New("Start succeeded without capabilities")
		}
		if !errors.Is(err, ErrPermission) || !errors.Is(err, ErrLoad) || !errors.Is(err, unix.EPERM) {
			return errors.New("Start without capabilities: " + err.Error() + "; want ErrPermission wrapping ErrLoad and EPERM")
		}
		t.Logf("Start without capabilities: %v", err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
