package eval

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/turboretry/turboretry/internal/netns"
)

// namespaces creates and deletes the network namespaces of one run.
type namespaces struct{ names []string }

func (n *namespaces) add(name string) error {
	if err := netns.Add(name); err != nil {
		return err
	}
	n.names = append(n.names, name)
	return nil
}

// close deletes every namespace, and the links in them with it.
func (n *namespaces) close() error {
	var errs []error
	for _, ns := range n.names {
		errs = append(errs, netns.Del(ns))
	}
	n.names = nil
	return errors.Join(errs...)
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
