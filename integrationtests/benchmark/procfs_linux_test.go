//go:build linux

package benchmark

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the tick counters in /proc/stat and
// /proc/<pid>/stat. The kernel exports them in USER_HZ, which is 100 on
// every Linux architecture whatever the internal tick rate (sysconf's
// _SC_CLK_TCK reports the same constant), so no cgo is needed to ask.
const userHZ = 100

// tickNs is one USER_HZ tick in nanoseconds.
const tickNs = 1e9 / userHZ

// machineCPU is the "cpu" line of /proc/stat (all CPUs summed), in ticks,
// and the number of per-CPU lines.
//
// The busy columns are sampled at the timer tick: a CPU that wakes for less
// than a tick (4 ms at HZ=250) and idles again is not counted, so bursty
// packet work is under-counted. Idle and iowait, on a tickless kernel, are
// measured from idle entry and exit instead, so ncpu x wall time minus
// idle and iowait is the precise busy time (see busyNs).
type machineCPU struct {
	// busy is user + nice + system + irq + softirq, tick-sampled. steal is
	// kept apart (the hypervisor ran another guest, not our work); guest
	// and guest_nice are already inside user and nice.
	busy, idle, iowait, steal uint64
	ncpu                      int
	at                        time.Time // when it was read; zero from the parser
}

// parseMachineCPU reads the aggregate "cpu" line of /proc/stat. Kernels
// older than 2.6.11 lack steal and later columns; missing trailing
// columns count as zero, but user, nice, system and idle are required.
func parseMachineCPU(data []byte) (machineCPU, error) {
	var m machineCPU
	found := false
	for line := range bytes.Lines(data) {
		f := strings.Fields(string(line))
		if len(f) > 0 && isPerCPU(f[0]) {
			m.ncpu++
		}
		if len(f) == 0 || f[0] != "cpu" || found {
			continue
		}
		found = true
		f = f[1:]
		if len(f) < 4 {
			return machineCPU{}, fmt.Errorf("/proc/stat: cpu line has %d columns, want at least 4", len(f))
		}
		var v [8]uint64 // user nice system idle iowait irq softirq steal
		for i := range min(len(f), len(v)) {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return machineCPU{}, fmt.Errorf("/proc/stat: cpu column %d: %w", i+1, err)
			}
			v[i] = n
		}
		// Summing five counters cannot overflow in practice, but a corrupt
		// file must not wrap into a small plausible number.
		busy := uint64(0)
		for _, n := range []uint64{v[0], v[1], v[2], v[5], v[6]} {
			if busy+n < busy {
				return machineCPU{}, errors.New("/proc/stat: cpu busy time overflows")
			}
			busy += n
		}
		m.busy, m.idle, m.iowait, m.steal = busy, v[3], v[4], v[7]
	}
	if !found {
		return machineCPU{}, errors.New("/proc/stat: no aggregate cpu line")
	}
	if m.ncpu == 0 {
		return machineCPU{}, errors.New("/proc/stat: no per-CPU lines")
	}
	return m, nil
}

// isPerCPU tells a per-CPU line's name ("cpu0") from the aggregate "cpu".
func isPerCPU(name string) bool {
	n, ok := strings.CutPrefix(name, "cpu")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 32)
	return err == nil
}

// parseProcTicks returns utime + stime of /proc/<pid>/stat in ticks. For a
// process these are thread-group totals, threads that already exited
// included. The command name (field 2) is in parentheses and may hold
// spaces and parentheses itself, so fields are counted from the last ')'.
func parseProcTicks(data []byte) (uint64, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, errors.New("/proc/<pid>/stat: no command name")
	}
	// After the name: state (field 3) ... utime (14), stime (15).
	f := strings.Fields(string(data[end+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("/proc/<pid>/stat: %d fields after the command name, want at least %d", len(f), stime+1)
	}
	u, err := strconv.ParseUint(f[utime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/<pid>/stat: utime: %w", err)
	}
	s, err := strconv.ParseUint(f[stime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/<pid>/stat: stime: %w", err)
	}
	if u+s < u {
		return 0, errors.New("/proc/<pid>/stat: utime + stime overflows")
	}
	return u + s, nil
}

// parseSchedstat returns the first column of /proc/<pid>/task/<tid>/schedstat:
// the thread's time on a CPU in nanoseconds.
func parseSchedstat(data []byte) (uint64, error) {
	f := strings.Fields(string(data))
	if len(f) < 1 {
		return 0, errors.New("schedstat: empty")
	}
	ns, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat: run time: %w", err)
	}
	return ns, nil
}

// parseSNMP returns the counters of protocol proto ("Udp") from
// /proc/net/snmp, where each protocol has a line of names followed by a
// line of values, both prefixed "Proto:".
func parseSNMP(data []byte, proto string) (map[string]uint64, error) {
	prefix := proto + ":"
	var names []string
	for line := range bytes.Lines(data) {
		f := strings.Fields(string(line))
		if len(f) == 0 || f[0] != prefix {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		if len(f)-1 != len(names) {
			return nil, fmt.Errorf("snmp: %s has %d names but %d values", proto, len(names), len(f)-1)
		}
		m := make(map[string]uint64, len(names))
		for i, name := range names {
			// Some counters (Tcp MaxConn) may be negative; keep them as 0
			// rather than fail, they are not what we read.
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				un, uerr := strconv.ParseUint(f[i+1], 10, 64)
				if uerr != nil {
					return nil, fmt.Errorf("snmp: %s %s: %w", proto, name, err)
				}
				m[name] = un
				continue
			}
			m[name] = uint64(max(n, 0))
		}
		return m, nil
	}
	if names == nil {
		return nil, fmt.Errorf("snmp: no %s lines", proto)
	}
	return nil, fmt.Errorf("snmp: %s has names but no values", proto)
}

// readMachineCPU samples /proc/stat.
func readMachineCPU() (machineCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	m, err := parseMachineCPU(data)
	if err != nil {
		return machineCPU{}, err
	}
	m.at = time.Now()
	return m, nil
}

// procCPU is one sample of a process's CPU time two ways: the thread-group
// total in ticks (complete, 10 ms resolution) and each live thread's run
// time in ns (precise, but a thread that exits takes its time with it).
type procCPU struct {
	ticks   uint64
	threads map[string]uint64 // tid -> schedstat run time, ns
}

// readProcCPU samples process pid.
func readProcCPU(pid int) (procCPU, error) {
	dir := fmt.Sprintf("/proc/%d", pid)
	data, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procCPU{}, err
	}
	p := procCPU{threads: map[string]uint64{}}
	if p.ticks, err = parseProcTicks(data); err != nil {
		return procCPU{}, err
	}
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return procCPU{}, err
	}
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited since the listing
		}
		if err != nil {
			return procCPU{}, err
		}
		ns, err := parseSchedstat(data)
		if err != nil {
			return procCPU{}, fmt.Errorf("thread %s: %w", t.Name(), err)
		}
		p.threads[t.Name()] = ns
	}
	return p, nil
}

// since returns the CPU time the process used between before and p: from
// the per-thread run times in ns, and from the tick totals; exited counts
// threads of before that are gone (their time in between is missing from
// ns, not from the ticks).
func (p procCPU) since(before procCPU) (ns, tickNanos float64, exited int) {
	for tid, now := range p.threads {
		was := before.threads[tid] // 0 for a thread started in between
		if now >= was {
			ns += float64(now - was)
		}
	}
	for tid := range before.threads {
		if _, ok := p.threads[tid]; !ok {
			exited++
		}
	}
	if p.ticks >= before.ticks {
		tickNanos = float64(p.ticks-before.ticks) * tickNs
	}
	return ns, tickNanos, exited
}

// readUDPCounters reads the UDP counters of process pid's network
// namespace (/proc/<pid>/net is the namespace of that process, not ours).
func readUDPCounters(pid int) (map[string]uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/snmp", pid))
	if err != nil {
		return nil, err
	}
	return parseSNMP(data, "Udp")
}
