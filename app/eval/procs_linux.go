package eval

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child is a process started in a namespace, pinned to CPUs: taskset and
// ip netns exec both exec, so its PID is the program's.
type child struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	err    error // valid once exited is closed
}

// startChild runs argv in namespace ns on cpus, its output in logPath.
// The child inherits this process's nice value (pinSelf).
func startChild(name, ns string, cpus []int, env []string, logPath string, argv ...string) (*child, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"-c", cpuList(cpus), "ip", "netns", "exec", ns}, argv...)
	cmd := exec.Command("taskset", args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Its own process group, so a signal to this process's group (^C)
	// does not race the orderly stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("eval: starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: lf, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		lf.Close()
		close(c.exited)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// alive reports whether the child still runs.
func (c *child) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// stop asks the child to shut down (SIGTERM) and kills it after timeout.
func (c *child) stop(timeout time.Duration) {
	if !c.alive() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(timeout):
		c.kill()
	}
}

// logTail is the end of the child's log, for error messages.
func (c *child) logTail() string {
	b, err := os.ReadFile(c.log.Name())
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// pinPID sets the CPU affinity and the nice value of one thread (or
// kthread).
func pinPID(pid int, cpus []int, nice int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		return err
	}
	return unix.Setpriority(unix.PRIO_PROCESS, pid, nice)
}

// pinSelf pins every thread of this process to cpus at nice; threads
// started later inherit both from the thread that starts them.
func pinSelf(cpus []int, nice int) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := pinPID(tid, cpus, nice); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// taskCPU is a thread's CPU time so far: the first field of its
// schedstat (nanoseconds on a CPU, measured at every switch, not sampled
// at the tick), 0 if it is gone.
func taskCPU(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ns)
}

// procCPU sums the CPU time of every thread of process pid.
func procCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range ents {
		total += taskCPU(filepath.Join(dir, e.Name(), "schedstat"))
	}
	return total
}

// threadCPU is one thread's (a NAPI kthread's) CPU time.
func threadCPU(pid int) time.Duration { return taskCPU(fmt.Sprintf("/proc/%d/schedstat", pid)) }

// netRXSoftirqs is the NET_RX softirq count of each CPU (/proc/softirqs):
// with threaded NAPI, receive work runs in the NAPI threads and these
// should barely move; the figure shows where the remaining softirq lands.
func netRXSoftirqs() []uint64 {
	b, err := os.ReadFile("/proc/softirqs")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "NET_RX:" {
			out := make([]uint64, len(f)-1)
			for i, v := range f[1:] {
				out[i], _ = strconv.ParseUint(v, 10, 64)
			}
			return out
		}
	}
	return nil
}

// loadAverage is the first field of /proc/loadavg.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// udpRcvbufErrors is the UDP RcvbufErrors counter of the network
// namespace process pid is in (/proc/PID/net/snmp): datagrams the kernel
// dropped because a socket's buffer was full.
func udpRcvbufErrors(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/snmp", pid))
	if err != nil {
		return 0
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		for i, v := range f[1:] {
			if i < len(names) && names[i] == "RcvbufErrors" {
				n, _ := strconv.ParseUint(v, 10, 64)
				return n
			}
		}
	}
	return 0
}
