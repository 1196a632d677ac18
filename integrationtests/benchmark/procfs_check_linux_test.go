//go:build linux

package benchmark

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const sampleStat = `cpu  595721 292 201917 925013 1462 7 22184 839 11 0
cpu0 297000 100 100000 460000 700 3 11000 400 5 0
cpu1 298721 192 101917 465013 762 4 11184 439 6 0
intr 123 4 5
ctxt 999
`

func TestParseMachineCPU(t *testing.T) {
	got, err := parseMachineCPU([]byte(sampleStat))
	if err != nil {
		t.Fatal(err)
	}
	// user+nice+system+irq+softirq; guest (11) is inside user already.
	want := machineCPU{busy: 595721 + 292 + 201917 + 7 + 22184, idle: 925013, iowait: 1462, steal: 839, ncpu: 2}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// An old kernel's four columns: the rest count as zero.
	if got, err := parseMachineCPU([]byte("cpu 1 2 3 4\ncpu0 1 2 3 4\n")); err != nil || got != (machineCPU{busy: 6, idle: 4, ncpu: 1}) {
		t.Fatalf("four columns: %+v, %v", got, err)
	}
	for name, in := range map[string]string{
		"empty":        "",
		"per-cpu only": "cpu0 1 2 3 4 5 6 7 8\n",
		"3 columns":    "cpu 1 2 3\n",
		"not a number": "cpu 1 2 x 4\n",
		"negative":     "cpu 1 -2 3 4\n",
		"busy wraps":   "cpu 18446744073709551615 1 0 0\ncpu0 0 0 0 0\n",
		"no per-cpu":   "cpu 1 2 3 4\ncpux 1 2 3 4\ncpu 1 2 3 4\n",
	} {
		if got, err := parseMachineCPU([]byte(in)); err == nil {
			t.Errorf("%s: accepted as %+v", name, got)
		}
	}
}

func TestParseProcTicks(t *testing.T) {
	// A command name with spaces and parentheses: the fields count from
	// the last ')'. utime 561, stime 2011.
	const rest = " S 0 1 1 0 -1 4194560 100 200 0 0 561 2011 3 4 20 0 1 0 27 1000 200\n"
	for _, comm := range []string{"systemd", "a b", "x) (y", ")"} {
		got, err := parseProcTicks([]byte("1 (" + comm + ")" + rest))
		if err != nil || got != 561+2011 {
			t.Errorf("comm %q: got %d, %v; want 2572", comm, got, err)
		}
	}
	for name, in := range map[string]string{
		"no name":      "1 systemd S 0 1 1 0 -1 4194560 100 200 0 0 561 2011",
		"short":        "1 (x) S 0 1 1 0 -1 4194560 100 200 0 0 561",
		"bad utime":    "1 (x) S 0 1 1 0 -1 4194560 100 200 0 0 u 2011",
		"bad stime":    "1 (x) S 0 1 1 0 -1 4194560 100 200 0 0 561 -5",
		"sum overflow": "1 (x) S 0 1 1 0 -1 4194560 100 200 0 0 18446744073709551615 1",
	} {
		if got, err := parseProcTicks([]byte(in)); err == nil {
			t.Errorf("%s: accepted as %d", name, got)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	if got, err := parseSchedstat([]byte("206630825 50628730 709\n")); err != nil || got != 206630825 {
		t.Fatalf("got %d, %v", got, err)
	}
	for _, in := range []string{"", " \n", "x 1 2", "-1 2 3"} {
		if got, err := parseSchedstat([]byte(in)); err == nil {
			t.Errorf("%q: accepted as %d", in, got)
		}
	}
}

const sampleSNMP = `Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 12345
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn
Tcp: 1 200 120000 -1
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 75870542 95926 653225 35055753 653225 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 1 2 3 4 5 6 7 8 9
`

func TestParseSNMP(t *testing.T) {
	udp, err := parseSNMP([]byte(sampleSNMP), "Udp")
	if err != nil {
		t.Fatal(err)
	}
	if len(udp) != 9 || udp["InDatagrams"] != 75870542 || udp["RcvbufErrors"] != 653225 || udp["MemErrors"] != 0 {
		t.Fatalf("Udp = %v", udp)
	}
	// Not UdpLite's line, whose name starts the same.
	if lite, err := parseSNMP([]byte(sampleSNMP), "UdpLite"); err != nil || lite["RcvbufErrors"] != 5 {
		t.Fatalf("UdpLite = %v, %v", lite, err)
	}
	// Tcp MaxConn is -1 by design: kept as 0, not an error.
	if tcp, err := parseSNMP([]byte(sampleSNMP), "Tcp"); err != nil || tcp["MaxConn"] != 0 || tcp["RtoMax"] != 120000 {
		t.Fatalf("Tcp = %v, %v", tcp, err)
	}
	// A counter above the int64 range still parses.
	if big, err := parseSNMP([]byte("Udp: A\nUdp: 18446744073709551615\n"), "Udp"); err != nil || big["A"] != 1<<64-1 {
		t.Fatalf("big = %v, %v", big, err)
	}
	for name, in := range map[string]string{
		"absent":      "Ip: A B\nIp: 1 2\n",
		"names only":  "Udp: A B\n",
		"short line":  "Udp: A B\nUdp: 1\n",
		"long line":   "Udp: A B\nUdp: 1 2 3\n",
		"not numeric": "Udp: A B\nUdp: 1 x\n",
	} {
		if got, err := parseSNMP([]byte(in), "Udp"); err == nil {
			t.Errorf("%s: accepted as %v", name, got)
		}
	}
}

func TestProcCPUSince(t *testing.T) {
	before := procCPU{ticks: 100, threads: map[string]uint64{"1": 1000, "2": 500, "3": 70}}
	after := procCPU{ticks: 103, threads: map[string]uint64{"1": 4000, "2": 500, "4": 250}}
	ns, tick, exited := after.since(before)
	// Thread 1 ran 3000 ns, 2 nothing, 4 (new) 250; 3 exited.
	if ns != 3250 || tick != 3*tickNs || exited != 1 {
		t.Fatalf("since = %v ns, %v tick ns, %d exited; want 3250, %v, 1", ns, tick, exited, float64(3*tickNs))
	}
	// A tid reused with a smaller count contributes nothing, not a wrap.
	if ns, _, _ := (procCPU{threads: map[string]uint64{"1": 10}}).since(before); ns != 0 {
		t.Fatalf("reused tid: %v ns", ns)
	}
}

func TestBusyNs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := machineCPU{busy: 100, idle: 100, iowait: 10, ncpu: 2, at: t0}
	// One second on two CPUs: 200 ticks, 60 idle + 10 iowait, so 130
	// ticks busy, whatever the tick-sampled busy column claims.
	b := machineCPU{busy: 110, idle: 160, iowait: 20, ncpu: 2, at: t0.Add(time.Second)}
	if got := busyNs(a, b); got != 130*tickNs {
		t.Fatalf("busyNs = %v, want %v", got, 130*tickNs)
	}
	if got := busyShare(a, b); got != 0.65 {
		t.Fatalf("busyShare = %v, want 0.65", got)
	}
	if got := busyShare(a, a); got != 0 {
		t.Fatalf("no time passed: %v", got)
	}
	// iowait going backwards counts as 0, not as a wrapped huge number.
	c := b
	c.iowait = 0
	if got := busyNs(a, c); got != 140*tickNs {
		t.Fatalf("iowait backwards: %v, want %v", got, 140*tickNs)
	}
	// More idle than wall time (a counter glitch) is 0 busy, not negative.
	c.idle = 10000
	if got := busyNs(a, c); got != 0 {
		t.Fatalf("idle beyond wall time: %v", got)
	}
}

// TestReadProcfs reads this machine's real files: the parsers must accept
// what the running kernel writes.
func TestReadProcfs(t *testing.T) {
	m, err := readMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if m.busy == 0 || m.idle == 0 || m.ncpu == 0 || m.at.IsZero() {
		t.Errorf("/proc/stat: %+v", m)
	}
	pid := os.Getpid()
	p, err := readProcCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.threads[strconv.Itoa(pid)]; !ok {
		t.Errorf("own threads %v lack the main thread %d", p.threads, pid)
	}
	u, err := readUDPCounters(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"InDatagrams", "RcvbufErrors"} {
		if _, ok := u[k]; !ok {
			t.Errorf("Udp counters %v lack %s", u, k)
		}
	}
	if _, err := readProcCPU(-1); err == nil {
		t.Error("readProcCPU(-1) succeeded")
	}
}

func FuzzParseMachineCPU(f *testing.F) {
	f.Add([]byte(sampleStat))
	f.Add([]byte("cpu 1 2 3 4\ncpu0 1 2 3 4\n"))
	f.Add([]byte("cpu 1 2 3\ncpu7 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMachineCPU(data)
		if err != nil {
			return
		}
		// What it accepted, written back, reads the same.
		line := fmt.Sprintf("cpu %d 0 0 %d %d 0 0 %d\n", m.busy, m.idle, m.iowait, m.steal) + strings.Repeat("cpu0 0 0 0 0\n", m.ncpu)
		if again, err := parseMachineCPU([]byte(line)); err != nil || again != m {
			t.Fatalf("%q -> %+v, but %q -> %+v, %v", data, m, line, again, err)
		}
	})
}

func FuzzParseProcTicks(f *testing.F) {
	f.Add([]byte("1 (systemd) S 0 1 1 0 -1 4194560 100 200 0 0 561 2011 3 4 20 0 1 0 27 1000 200\n"))
	f.Add([]byte("7 (x) (y) R 0 1 1 0 -1 0 0 0 0 0 1 2"))
	f.Add([]byte("1 (x) S"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := parseProcTicks(data); err == nil && !strings.Contains(string(data), ")") {
			t.Fatalf("accepted %q without a command name", data)
		}
	})
}

func FuzzParseSchedstat(f *testing.F) {
	f.Add([]byte("206630825 50628730 709\n"))
	f.Add([]byte("0 0 1"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		ns, err := parseSchedstat(data)
		if err != nil {
			return
		}
		if again, err := parseSchedstat([]byte(strconv.FormatUint(ns, 10))); err != nil || again != ns {
			t.Fatalf("%q -> %d, but its decimal form -> %d, %v", data, ns, again, err)
		}
	})
}

func FuzzParseSNMP(f *testing.F) {
	f.Add([]byte(sampleSNMP), "Udp")
	f.Add([]byte("Udp: A B\nUdp: 1\n"), "Udp")
	f.Add([]byte("Tcp: MaxConn\nTcp: -1\n"), "Tcp")
	f.Fuzz(func(t *testing.T, data []byte, proto string) {
		if _, err := parseSNMP(data, proto); err == nil && !strings.Contains(string(data), proto+":") {
			t.Fatalf("accepted %q for %q with no %s line", data, proto, proto)
		}
	})
}
