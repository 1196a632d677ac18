package datapath

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/flood/live"
	"github.com/turboretry/turboretry/offload/xdp"
)

// BenchmarkDatapathSaturation is the datapath's cost per Retry on one
// core near and at saturation: the live-frames generator (a thread pinned
// to CPU 0) floods spoofed Initials with random connection IDs into the
// client's veth, paced at each sub-benchmark's rate for satFor (or, for
// "unpaced", as fast as it can); everything else of this process (the
// datapath's queue goroutine, the Go runtime) and the server veth's NAPI
// thread (the XDP program and the AF_XDP copy, at SCHED_FIFO as softirq
// work would be) run on CPU 1. An XDP sink on the client's veth counts and
// drops the Retries. b.N is ignored: each flood is one measurement
// (-benchtime=1x).
//
// Reported per Retry answered: the process's CPU time without the
// generator's thread (datapath-ns/retry), the NAPI thread's
// (napi-ns/retry) and their sum (core-ns/retry: 1e9 over it is the
// Retries one core could send if nothing else ran there), Retries/s, and
// the share of the Initials the XDP program redirected that got one
// (answered-%). Run with -cpuprofile to see where the datapath's time goes.
func BenchmarkDatapathSaturation(b *testing.B) {
	const satFor = 2 * time.Second
	if n := len(onlineCPUs()); n < 2 {
		b.Skipf("skipping: needs 2 CPUs, has %d", n)
	}
	env := newTestEnv(b, nil, hangGuard)
	var sink *live.ReplySink
	var gen *live.Generator
	env.in(b, env.nsC, func() {
		var err error
		if sink, err = live.AttachReplySink(ifC, spoofSat, portS); err != nil {
			b.Fatal(err)
		}
		dst, _ := net.ParseMAC(hw(macS))
		if gen, err = live.New(live.Config{Iface: ifC, Target: serverAP, Spoof: spoofSat, DstMAC: dst, CPUs: []int{0}}); err != nil {
			b.Fatal(err)
		}
	})
	b.Cleanup(func() { gen.Close(); sink.Close() })
	napi := threadedNAPI(b, env.nsS, ifS, 1)
	threadedNAPI(b, env.nsC, ifC, 0)
	pinProcess(b, 1)
	// Warm up: the agent's key caches, the rings.
	if _, err := gen.Run(context.Background(), flood.RunConfig{Count: 20000, Duration: 5 * time.Second, Rate: 100_000}); err != nil {
		b.Fatal(err)
	}
	for _, rate := range []float64{100e3, 200e3, 400e3, 0} {
		name := "unpaced"
		if rate > 0 {
			name = fmt.Sprintf("%.0fkpps", rate/1e3)
		}
		b.Run(name, func(b *testing.B) {
			st0 := env.stats(b)
			r0, _, err := sink.Counts()
			if err != nil {
				b.Fatal(err)
			}
			self0, napi0 := processCPU(), taskCPU(napi)
			fs, err := gen.Run(context.Background(), flood.RunConfig{Count: 1 << 40, Duration: satFor, Rate: rate})
			if err != nil {
				b.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // the last Retries
			r1, _, err := sink.Counts()
			if err != nil {
				b.Fatal(err)
			}
			self1, napi1 := processCPU(), taskCPU(napi)
			st1 := env.stats(b)
			retries := float64(r1 - r0)
			if retries == 0 {
				b.Fatal("no Retry came back")
			}
			toAgent := st1.XDP[xdp.AgentInitial] - st0.XDP[xdp.AgentInitial]
			dpCPU := (self1 - self0 - fs.CPU).Seconds()
			napiCPU := (napi1 - napi0).Seconds()
			b.ReportMetric(retries/fs.Elapsed.Seconds(), "retries/s")
			b.ReportMetric(100*retries/float64(max(toAgent, 1)), "answered-%")
			b.ReportMetric(dpCPU*1e9/retries, "datapath-ns/retry")
			b.ReportMetric(napiCPU*1e9/retries, "napi-ns/retry")
			b.ReportMetric((dpCPU+napiCPU)*1e9/retries, "core-ns/retry")
			b.Logf("offered %.0f pps (%d refused by the veth), XDP to the agent %d, AF_XDP received %d, Retries %d; CPU 1 busy with ours %.0f%%",
				fs.PPS, fs.Refused, toAgent, st1.FramesRX-st0.FramesRX, r1-r0, 100*(dpCPU+napiCPU)/(satFor.Seconds()+0.2))
		})
	}
}

var spoofSat = netip.MustParsePrefix("198.18.128.0/17")

// threadedNAPI switches dev in ns to threaded NAPI and pins its thread to
// cpu at SCHED_FIFO 1, returning the thread's PID.
func threadedNAPI(tb testing.TB, ns, dev string, cpu int) int {
	tb.Helper()
	netnstest.IP(tb, "netns", "exec", ns, "sh", "-c", "echo 1 > /sys/class/net/"+dev+"/threaded")
	pid := 0
	for deadline := time.Now().Add(5 * time.Second); pid == 0; {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
			if err == nil && strings.HasPrefix(string(comm), "napi/"+dev+"-") {
				pid, _ = strconv.Atoi(e.Name())
			}
		}
		if pid == 0 && time.Now().After(deadline) {
			tb.Fatalf("no NAPI thread for %s", dev)
		}
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		tb.Fatal(err)
	}
	if err := unix.SchedSetAttr(pid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
		tb.Fatal(err)
	}
	return pid
}

// pinProcess pins every thread of this process to cpu (threads created
// later inherit it); Cleanup restores all CPUs.
func pinProcess(tb testing.TB, cpu int) {
	tb.Helper()
	set := func(s *unix.CPUSet) {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			_ = unix.SchedSetaffinity(tid, s)
		}
	}
	var one, all unix.CPUSet
	one.Set(cpu)
	for _, c := range onlineCPUs() {
		all.Set(c)
	}
	set(&one)
	tb.Cleanup(func() { set(&all) })
}

func onlineCPUs() []int {
	var s unix.CPUSet
	if unix.SchedGetaffinity(0, &s) != nil {
		return nil
	}
	var out []int
	for c := range 1024 {
		if s.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// processCPU is this process's user and system time.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// taskCPU is a thread's CPU time from its schedstat.
func taskCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	ns, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns)
}
