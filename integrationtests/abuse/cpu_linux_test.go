//go:build linux

package abuse

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// placement is the CPUs a child process runs on (none: wherever the
// scheduler puts it).
type placement struct {
	cpus []int
}

func (p placement) String() string {
	if len(p.cpus) == 0 {
		return "any CPU"
	}
	return fmt.Sprintf("CPUs %v", p.cpus)
}

// startPlaced starts cmd placed by p. A child inherits the CPU affinity of
// the thread that forks it (it is per thread on Linux), so cmd is started
// from a thread of its own that takes p first and is never given back to
// the runtime: it ends with its goroutine, and no other goroutine runs on
// it. What cmd execs (ip netns exec execs the program it runs) inherits
// the same.
func startPlaced(cmd *exec.Cmd, p placement) error {
	if len(p.cpus) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		var set unix.CPUSet
		for _, c := range p.cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- fmt.Errorf("pinning to CPUs %v: %w", p.cpus, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// cpuLayout places a namespace test's parties on the CPUs this process
// may run on: the server, the attacker process, and the benign clients
// (this process).
type cpuLayout struct {
	server, attacker placement
	benign           []int
}

// isolatedCPUs lays out a test that emulates an attacker on a machine of
// its own: the attacker process alone on the last CPU, at normal priority
// (it dials as fast as that CPU lets it), the server on the first, and the
// benign clients on the CPUs between or, on a two-CPU machine, with the
// server, as in the rounds without the attack. ok is false with fewer than
// two CPUs: nothing is isolated then.
func isolatedCPUs() (l cpuLayout, ok bool) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return cpuLayout{}, false
	}
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return cpuLayout{}, false
	}
	l = cpuLayout{server: placement{cpus: cpus[:1]}, attacker: placement{cpus: cpus[len(cpus)-1:]}, benign: cpus[:1]}
	if len(cpus) > 2 {
		l.benign = cpus[1 : len(cpus)-1]
	}
	return l, true
}

// pinSelf moves every thread of this process onto cpus and returns what
// puts them back where they were allowed before. A thread the runtime
// starts later inherits its creator's set, so the passes repeat until
// one finds no thread it had not moved.
func pinSelf(cpus []int) (restore func(), err error) {
	var before, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		return nil, err
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := setAllThreads(&set); err != nil {
		_ = setAllThreads(&before)
		return nil, err
	}
	return func() { _ = setAllThreads(&before) }, nil
}

// setAllThreads gives every thread of this process the CPU set.
func setAllThreads(set *unix.CPUSet) error {
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		moved := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			// A thread that exited meanwhile is no error.
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			done[tid], moved = true, true
		}
		if !moved {
			return nil
		}
	}
}

// schedWait is the time the threads of process pid have spent runnable,
// waiting for a CPU (the second field of each task's schedstat): what a
// starved process shows that its CPU time does not.
func schedWait(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		ns, _ := strconv.ParseInt(f[1], 10, 64)
		sum += time.Duration(ns)
	}
	return sum, nil
}

// udpQueue is the bytes queued to read and the datagrams dropped so far
// by the UDP sockets bound to port in process pid's network namespace
// (/proc/net/udp's rx_queue and drops columns, summed).
func udpQueue(pid int, port uint16) (queued, drops int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/udp", pid))
	if err != nil {
		return 0, 0, err
	}
	suffix := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 13 || !strings.HasSuffix(f[1], suffix) {
			continue
		}
		_, rx, ok := strings.Cut(f[4], ":")
		if !ok {
			continue
		}
		q, _ := strconv.ParseInt(rx, 16, 64)
		d, _ := strconv.ParseInt(f[12], 10, 64)
		queued += q
		drops += d
	}
	return queued, drops, nil
}
