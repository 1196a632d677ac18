package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ip runs the ip command (iproute2) with args.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNS runs fn on the calling goroutine's thread switched into the named
// network namespace; sockets fn creates stay there. The thread switches
// back afterwards or, failing that, stays locked so the runtime retires
// it with the goroutine.
func inNS(ns string, fn func() error) error {
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("eval: open own netns: %w", err)
	}
	defer unix.Close(self)
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("eval: open netns %s: %w", ns, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("eval: setns %s: %w", ns, err)
	}
	defer func() {
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}

// namespaces creates and deletes the network namespaces of one run.
type namespaces struct{ names []string }

func (n *namespaces) add(name string) error {
	if err := ip("netns", "add", name); err != nil {
		return err
	}
	n.names = append(n.names, name)
	return nil
}

// close deletes every namespace, and the links in them with it.
func (n *namespaces) close() error {
	var errs []error
	for _, ns := range n.names {
		if _, err := os.Stat("/run/netns/" + ns); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		errs = append(errs, ip("netns", "del", ns))
	}
	n.names = nil
	return errors.Join(errs...)
}

// waitUp waits until dev in ns is operationally up: until linkwatch has
// seen the carrier a device drops everything it sends.
func waitUp(ns, dev string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "dev", dev).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip link show %s: %v: %s", dev, err, out)
		}
		if strings.Contains(string(out), "state UP") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("eval: %s in %s never came up: %s", dev, ns, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// setThreaded switches dev in ns to threaded NAPI and returns the NAPI
// kthreads' PIDs (one per receive queue with NAPI). The device must be in
// NAPI mode already (GRO or an XDP program on a veth). It cannot be
// switched back on every kernel; the namespace's deletion ends it.
func setThreaded(ns, dev string) ([]int, error) {
	before, err := napiThreads(dev)
	if err != nil {
		return nil, err
	}
	if err := inNSWithSysfs(ns, fmt.Sprintf("echo 1 > /sys/class/net/%s/threaded", dev)); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, err := napiThreads(dev)
		if err != nil {
			return nil, err
		}
		var fresh []int
		for _, p := range after {
			if !slices.Contains(before, p) {
				fresh = append(fresh, p)
			}
		}
		if len(fresh) > 0 {
			return fresh, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("eval: no NAPI thread appeared for %s in %s (is it in NAPI mode?)", dev, ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inNSWithSysfs runs a shell command under ip netns exec, which mounts the
// namespace's own /sys.
func inNSWithSysfs(ns, cmd string) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", cmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("eval: in %s: %s: %v: %s", ns, cmd, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// napiThreads lists the PIDs of the kthreads named napi/DEV-ID. Device
// names here are unique to the run, so other namespaces' devices do not
// match (comm is cut at 15 characters; the prefix always fits).
func napiThreads(dev string) ([]int, error) {
	prefix := "napi/" + dev + "-"
	if len(prefix) > 15 {
		return nil, fmt.Errorf("eval: device name %q too long to find its NAPI threads", dev)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid <= 0 {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		if strings.HasPrefix(string(comm), prefix) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
