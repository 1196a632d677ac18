// Package netns builds network namespaces joined by veth pairs with
// iproute2's ip, and runs code inside one. The evaluation (app/eval) builds
// its testbed with it, and the tests build theirs through
// internal/netnstest, which adds the test's checks and cleanup. Everything
// here needs root (CAP_NET_ADMIN, and CAP_SYS_ADMIN for setns).
package netns

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// IP runs ip with args; its error carries ip's output.
func IP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Add creates the network namespace name.
func Add(name string) error { return IP("netns", "add", name) }

// Del deletes the namespace name, and the links in it with it, unless it
// is gone already.
func Del(name string) error {
	if _, err := os.Stat("/run/netns/" + name); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return IP("netns", "del", name)
}

// End is one end of a veth pair: its namespace, name and optional MAC
// address ("" lets the kernel choose).
type End struct{ NS, Dev, MAC string }

// Veth creates a veth pair between a and b; extra (such as "numrxqueues",
// "2") is given to both ends.
func Veth(a, b End, extra ...string) error {
	end := func(e End) []string {
		s := append([]string{e.Dev, "netns", e.NS}, extra...)
		if e.MAC != "" {
			s = append(s, "address", e.MAC)
		}
		return s
	}
	args := append([]string{"link", "add"}, end(a)...)
	args = append(append(args, "type", "veth", "peer", "name"), end(b)...)
	return IP(args...)
}

// Up gives dev in ns the address prefix (none for the zero Prefix) and
// brings dev and lo up, without an IPv6 link-local address on dev (so no
// neighbour discovery chatter).
func Up(ns, dev string, prefix netip.Prefix) error {
	args := [][]string{{"-n", ns, "link", "set", dev, "addrgenmode", "none"}}
	if prefix.IsValid() {
		args = append(args, []string{"-n", ns, "addr", "add", prefix.String(), "dev", dev})
	}
	args = append(args, []string{"-n", ns, "link", "set", "lo", "up"}, []string{"-n", ns, "link", "set", dev, "up"})
	for _, a := range args {
		if err := IP(a...); err != nil {
			return err
		}
	}
	return nil
}

// Neigh adds a permanent neighbour entry ip -> mac on dev in ns.
func Neigh(ns, dev string, ip netip.Addr, mac string) error {
	return IP("-n", ns, "neigh", "replace", ip.String(), "lladdr", mac, "dev", dev, "nud", "permanent")
}

// WaitUp waits at most limit until dev in ns is operationally up. Until
// linkwatch (deferred work, rate limited to once a second) has seen the
// carrier, a device sends through noop_qdisc, which drops everything.
func WaitUp(ns, dev string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "dev", dev).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip link show %s: %v: %s", dev, err, out)
		}
		if strings.Contains(string(out), "state UP") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: %s in %s never came up: %s", dev, ns, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// In runs fn on the calling goroutine's thread switched into namespace
// ns; sockets fn creates stay there, and using them afterwards needs no
// switch. The thread switches back afterwards (also when fn panics or
// calls runtime.Goexit) or, failing that, stays locked so the runtime
// retires it with the goroutine.
func In(ns string, fn func() error) error {
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: open own namespace: %w", err)
	}
	defer unix.Close(self)
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: open %s: %w", ns, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: setns %s: %w", ns, err)
	}
	defer func() {
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}
