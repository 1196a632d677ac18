package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/flood"
)

// chunk is the most frames one BPF_PROG_RUN call sends: about 2 ms at the
// generator's speed, so cancellation and the deadline are noticed quickly.
const chunk = 16384

// xdpMd is the struct xdp_md context handed to BPF_PROG_RUN.
type xdpMd struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// Generator sends spoofed Initial frames with BPF_PROG_RUN in live-frames
// mode. Its methods are safe for concurrent use, but runs are serialized.
type Generator struct {
	cfg     Config
	objs    liveObjects
	lo      link.Link
	tmpl    *template
	ifindex int
	netns   uint64
	nsFD    int // the namespace New ran in, for Run's worker threads
	md      xdpMd
	mapCfg  liveTrGenConfig // what is in tr_gen_cfg

	mu     sync.Mutex
	closed bool
}

// New checks cfg, loads the program, writes its configuration (and in
// Pool mode the pool), and attaches it as generic XDP to the namespace's
// lo, where it passes everything: the attachment only keeps the program
// in the kernel's XDP dispatcher between runs. The calling thread must be
// in a network namespace other than the initial one (flood.ErrNeedNamespace
// otherwise), and Run must later be called from that namespace.
func New(cfg Config) (*Generator, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	private, err := flood.InPrivateNetns()
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", flood.ErrNeedNamespace, err)
	}
	if !private {
		return nil, flood.ErrNeedNamespace
	}
	ns, err := netnsInode()
	if err != nil {
		return nil, err
	}

	ifi, err := net.InterfaceByName(cfg.Iface)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if ifi.Flags&net.FlagLoopback != 0 || len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%w: %s is not an Ethernet interface", ErrConfig, cfg.Iface)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	tmpl, err := newTemplate(cfg, ifi.HardwareAddr)
	if err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("live: lifting the memlock limit: %w", err)
	}
	spec, err := loadLive()
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	pool := 1
	if cfg.Mode == Pool {
		pool = cfg.Generator.PoolSize()
	}
	spec.Maps[liveMapTrGenPool].MaxEntries = uint32(pool)
	g := &Generator{cfg: cfg, tmpl: tmpl, ifindex: ifi.Index, netns: ns,
		md: xdpMd{DataEnd: FrameLen, IngressIfindex: uint32(ifi.Index)}}
	if g.nsFD, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := spec.LoadAndAssign(&g.objs, nil); err != nil {
		unix.Close(g.nsFD)
		return nil, fmt.Errorf("live: loading the program: %w", err)
	}
	if err := g.load(pool); err != nil {
		g.objs.Close()
		unix.Close(g.nsFD)
		return nil, err
	}
	g.lo, err = link.AttachXDP(link.XDPOptions{Program: g.objs.TrFlood, Interface: lo.Index, Flags: link.XDPGenericMode})
	if err != nil {
		g.objs.Close()
		unix.Close(g.nsFD)
		return nil, fmt.Errorf("live: attaching to lo: %w", err)
	}
	return g, nil
}

// load writes the pool and then the configuration, which arms the program.
func (g *Generator) load(pool int) error {
	if g.cfg.Mode == Pool {
		var e liveTrGenEntry
		for i := range pool {
			p, sum := g.cfg.Generator.Entry(i)
			e.Sum = sum
			copy(e.Payload[:], p)
			if err := g.objs.TrGenPool.Update(uint32(i), &e, ebpf.UpdateAny); err != nil {
				return fmt.Errorf("live: writing pool entry %d: %w", i, err)
			}
		}
	}
	t := g.tmpl
	c := liveTrGenConfig{
		Ifindex:  uint32(g.ifindex),
		SrcBase:  t.base,
		SrcMask:  t.mask,
		Mode:     liveTrGenModeTR_GEN_RANDOM_CIDS,
		PoolSize: uint32(pool),
		IpSum:    t.ipSum,
		UdpSum:   t.udpSum,
	}
	if g.cfg.Mode == Pool {
		c.Mode = liveTrGenModeTR_GEN_POOL
	}
	copy(c.Hdr[:], t.hdr[:])
	g.mapCfg = c
	return g.setInterval(0)
}

// setInterval writes the configuration with the pacing interval of one
// CPU's frames (0: unpaced).
func (g *Generator) setInterval(d time.Duration) error {
	g.mapCfg.IntervalNs = uint64(max(d, 0))
	g.mapCfg.CatchUpNs = uint64(min(catchUpFrames*max(d, 0), maxCatchUp))
	if err := g.objs.TrGenCfg.Update(uint32(0), &g.mapCfg, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("live: writing the configuration: %w", err)
	}
	return nil
}

// netnsInode is the inode of the calling thread's network namespace.
func netnsInode() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return 0, fmt.Errorf("live: reading the network namespace: %w", err)
	}
	return st.Ino, nil
}

// Run sends frames until cfg.Count were attempted, cfg.Duration passed,
// or ctx is done, at cfg.Rate packets per second (0: as fast as the CPU
// runs the program). From 10 kpps per sending CPU the program paces the
// frames itself (a bounded spin to a per-CPU schedule, so the sending
// thread is busy for the whole run whatever the rate); below, Run sleeps
// between calls of at most cfg.Batch frames (0: a millisecond's worth).
// Stats.Sent is the program's own count of frames it built and redirected.
//
// Without Config.CPUs, Run sends from the calling thread, which must be in
// the namespace New was called in (ErrNamespace otherwise): pin it before
// calling to place the generator on a CPU. With Config.CPUs, one thread per
// CPU enters that namespace, pins itself and sends its share; a veth picks
// the peer's receive queue by the sending CPU, so this is how a flood
// reaches several queues.
func (g *Generator) Run(ctx context.Context, cfg flood.RunConfig) (Stats, error) {
	var st Stats
	if err := cfg.Check(); err != nil {
		return st, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return st, errors.New("live: generator closed")
	}
	var clk threadClock
	var sent0, bad0 uint64
	var x0 XmitStats
	var haveX bool
	if err := g.inNS(func() (err error) {
		x0, haveX, _ = ReadXmitStats(g.cfg.Iface)
		sent0, bad0, err = g.counters()
		return err
	}); err != nil {
		return st, err
	}
	workers := max(1, len(g.cfg.CPUs))
	if iv := pacedInterval(cfg.Rate / float64(workers)); iv > 0 {
		if err := g.setInterval(iv); err != nil {
			return st, err
		}
		defer g.setInterval(0)
	}
	start := clk.Now()
	if len(g.cfg.CPUs) == 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if ns, err := netnsInode(); err != nil || ns != g.netns {
			return st, ErrNamespace
		}
		w := g.send(ctx, cfg, clk, start, -1)
		st.add(w)
	} else {
		k := uint64(len(g.cfg.CPUs))
		ws := make([]worker, k)
		var wg sync.WaitGroup
		for i, cpu := range g.cfg.CPUs {
			share := cfg
			share.Count = cfg.Count / k
			if uint64(i) < cfg.Count%k {
				share.Count++
			}
			share.Rate = cfg.Rate / float64(k)
			if share.Count == 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ws[i] = g.sendOn(ctx, share, clk, start, cpu)
			}()
		}
		wg.Wait()
		for _, w := range ws {
			st.add(w)
		}
	}
	elapsed := clk.Now().Sub(start)
	st.CPUS = st.CPU.Seconds()
	if err := g.inNS(func() error {
		sent1, bad1, err := g.counters()
		if err != nil {
			return err
		}
		st.Sent, st.Errors = sent1-sent0, bad1-bad0
		if x1, ok, _ := ReadXmitStats(g.cfg.Iface); ok && haveX {
			st.HaveXmit = true
			st.Delivered, st.Refused = x1.Xmit-x0.Xmit, x1.Errors-x0.Errors
		}
		return nil
	}); err != nil {
		return st, err
	}
	st.Elapsed = elapsed
	if elapsed > 0 {
		st.PPS = float64(st.Sent) / elapsed.Seconds()
	}
	return st, st.err
}

// worker is what one sending thread did.
type worker struct {
	cpu     time.Duration
	calls   uint64
	stopped string
	err     error // a failure of the machinery, not of a send
	sendErr string
}

func (st *Stats) add(w worker) {
	st.CPU += w.cpu
	st.Calls += w.calls
	if st.Stopped == "" || w.stopped != "count" {
		st.Stopped = w.stopped
	}
	if st.FirstError == "" {
		st.FirstError = w.sendErr
	}
	if st.err == nil {
		st.err = w.err
	}
}

// sendOn runs send on a thread of its own in the generator's namespace,
// pinned to cpu; the thread is restored afterwards, or retired.
func (g *Generator) sendOn(ctx context.Context, cfg flood.RunConfig, clk threadClock, start time.Time, cpu int) worker {
	runtime.LockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return worker{err: fmt.Errorf("live: %w", err)}
	}
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return worker{err: fmt.Errorf("live: %w", err)}
	}
	defer unix.Close(self)
	// From here on the thread is changed: it stays locked (and is retired
	// with the goroutine) unless both changes are undone.
	if err := unix.Setns(g.nsFD, unix.CLONE_NEWNET); err != nil {
		return worker{err: fmt.Errorf("live: entering the generator's namespace: %w", err)}
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return worker{err: fmt.Errorf("live: pinning to CPU %d: %w", cpu, err)}
	}
	w := g.send(ctx, cfg, clk, start, cpu)
	if unix.SchedSetaffinity(0, &old) == nil && unix.Setns(self, unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread()
	}
	return w
}

// send is the sending loop of one thread, which is in the generator's
// namespace; cpu is the CPU it is pinned to, or -1.
func (g *Generator) send(ctx context.Context, cfg flood.RunConfig, clk threadClock, start time.Time, cpu int) (w worker) {
	w.stopped = "count"
	cpu0 := threadCPU()
	defer func() { w.cpu = threadCPU() - cpu0 }()
	done, err := g.sentBy(cpu)
	if err != nil {
		w.err = err
		return w
	}
	deadline := start.Add(cfg.Duration)
	// Three ways to send: unpaced, in chunks; paced by the program, which
	// spaces the frames itself (calls of 10 ms, kernel batches of 100 µs,
	// so the CPU is never held longer without a chance to reschedule);
	// below a rate the program's pacing handles, paced here with a token
	// bucket and short calls.
	per, batch := uint64(chunk), uint32(g.cfg.Batch)
	var bucket *flood.TokenBucket
	if cfg.Rate > 0 {
		if pacedInterval(cfg.Rate) > 0 {
			per = uint64(max(1, min(chunk, cfg.Rate/100)))
			batch = uint32(max(1, min(float64(batch), cfg.Rate/10000)))
		} else {
			bucket = flood.NewTokenBucket(cfg.Rate, pacedBurst(cfg.Rate, cfg.Batch), start)
			// The waits are short: sleep precisely (see threadClock).
			if old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
				_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
				defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
			}
		}
	}
	fd := g.objs.TrFlood.FD()
	var attempted uint64
	for attempted < cfg.Count {
		if ctx.Err() != nil {
			w.stopped = "cancelled"
			break
		}
		now := clk.Now()
		if !now.Before(deadline) {
			w.stopped = "duration"
			break
		}
		n := int(min(per, cfg.Count-attempted))
		if bucket != nil {
			granted, wait := bucket.Take(now, n)
			if granted == 0 {
				clk.Sleep(ctx, min(wait, deadline.Sub(now)))
				continue
			}
			n = granted
		}
		err := progRunLive(fd, g.tmpl.frame, &g.md, uint32(n), batch)
		w.calls++
		if err == nil {
			attempted += uint64(n)
			done += uint64(n)
			continue
		}
		if err != unix.EINTR {
			w.sendErr = fmt.Sprintf("live: BPF_PROG_RUN: %v", err)
			break
		}
		// Interrupted part way: the counter says how far it got.
		sent, err := g.sentBy(cpu)
		if err != nil {
			w.err = err
			return w
		}
		attempted += sent - done
		done = sent
	}
	return w
}

// maxPacedBurst is the most frames a paced call sends: a veth's receive
// ring holds 256 frames, so a larger burst would be refused in part even
// at a rate the receiver keeps up with.
const maxPacedBurst = 256

// pacedBurst is the token bucket depth at a rate too low for the
// program's pacing: batch when given, else a millisecond of frames.
func pacedBurst(rate float64, batch int) int {
	if batch > 0 {
		return min(batch, chunk)
	}
	return int(max(1, min(maxPacedBurst, rate/1000)))
}

// A paced sender that lost the CPU for a while sends the frames it owes at
// once, at most catchUpFrames of them (half a veth's ring) and at most
// maxCatchUp late; beyond that they are not sent, and the achieved rate
// falls short of the target.
const (
	catchUpFrames = 128
	maxCatchUp    = 2 * time.Millisecond
)

// minProgramPaced is the lowest rate (per sending CPU) the program paces
// itself: its wait between two frames is a bounded spin (about 2 ms at
// most), and below this rate sleeping between short calls costs less CPU
// than spinning.
const minProgramPaced = 10_000

// pacedInterval is the program's time between two frames of one CPU at
// rate, 0 where the program does not pace (unpaced, or too slow a rate).
func pacedInterval(rate float64) time.Duration {
	if rate < minProgramPaced {
		return 0
	}
	return time.Duration(float64(time.Second) / rate)
}

// threadClock is Run's time: the Go runtime's timers wake
// about a millisecond late here, which would cap a paced rate at about
// one burst per millisecond, so short waits sleep the (locked, dedicated)
// thread with nanosleep instead.
type threadClock struct{}

func (threadClock) Now() time.Time { return time.Now() }

func (threadClock) Sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	if d <= 2*time.Millisecond {
		ts := unix.NsecToTimespec(d.Nanoseconds())
		_ = unix.Nanosleep(&ts, nil) // an early wake-up only costs a loop
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// sentBy is the program's count of frames sent on cpu, or on all CPUs
// for -1.
func (g *Generator) sentBy(cpu int) (uint64, error) {
	var per []uint64
	if err := g.objs.TrGenCounters.Lookup(uint32(liveTrGenCounterTR_GEN_SENT), &per); err != nil {
		return 0, fmt.Errorf("live: reading counters: %w", err)
	}
	if cpu >= 0 {
		if cpu >= len(per) {
			return 0, fmt.Errorf("live: no counter for CPU %d", cpu)
		}
		return per[cpu], nil
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

// inNS runs fn on a thread in the generator's namespace.
func (g *Generator) inNS(fn func() error) error {
	runtime.LockOSThread()
	if ns, err := netnsInode(); err == nil && ns == g.netns {
		defer runtime.UnlockOSThread()
		return fn()
	}
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("live: %w", err)
	}
	defer unix.Close(self)
	if err := unix.Setns(g.nsFD, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("live: entering the generator's namespace: %w", err)
	}
	defer func() {
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}

// counters sums the program's per-CPU counters.
func (g *Generator) counters() (sent, bad uint64, err error) {
	var per []uint64
	for i, dst := range []*uint64{&sent, &bad} {
		if err := g.objs.TrGenCounters.Lookup(uint32(i), &per); err != nil {
			return 0, 0, fmt.Errorf("live: reading counters: %w", err)
		}
		for _, v := range per {
			*dst += v
		}
	}
	return sent, bad, nil
}

// threadCPU is the calling thread's user and system time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Close detaches the program from lo and unloads it. Runs in progress
// finish first.
func (g *Generator) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	err := g.lo.Close()
	unix.Close(g.nsFD)
	return errors.Join(err, g.objs.Close())
}
