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
	md      xdpMd

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
	if err := spec.LoadAndAssign(&g.objs, nil); err != nil {
		return nil, fmt.Errorf("live: loading the program: %w", err)
	}
	if err := g.load(pool); err != nil {
		g.objs.Close()
		return nil, err
	}
	g.lo, err = link.AttachXDP(link.XDPOptions{Program: g.objs.TrFlood, Interface: lo.Index, Flags: link.XDPGenericMode})
	if err != nil {
		g.objs.Close()
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
	if err := g.objs.TrGenCfg.Update(uint32(0), &c, ebpf.UpdateAny); err != nil {
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
// runs the program). cfg.Batch is ignored (Config.Batch is the kernel's).
// It must be called on a thread in the namespace New was called in, and
// runs on that thread throughout: pin it before calling to place the
// generator on a CPU. Stats.Sent is the program's own count of frames it
// built and redirected.
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
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if ns, err := netnsInode(); err != nil || ns != g.netns {
		return st, ErrNamespace
	}
	clk := cfg.Clock
	if clk == nil {
		clk = flood.SystemClock{}
	}
	sent0, bad0, err := g.counters()
	if err != nil {
		return st, err
	}
	x0, haveX, _ := ReadXmitStats(g.cfg.Iface)
	cpu0 := threadCPU()
	start := clk.Now()
	deadline := start.Add(cfg.Duration)
	var bucket *flood.TokenBucket
	if cfg.Rate > 0 {
		bucket = flood.NewTokenBucket(cfg.Rate, int(max(1, min(chunk, cfg.Rate/1000))), start)
	}
	fd := g.objs.TrFlood.FD()
	done := sent0 // the program's count of frames sent so far
	var attempted uint64
	st.Stopped = "count"
	for attempted < cfg.Count {
		if ctx.Err() != nil {
			st.Stopped = "cancelled"
			break
		}
		now := clk.Now()
		if !now.Before(deadline) {
			st.Stopped = "duration"
			break
		}
		n := int(min(chunk, cfg.Count-attempted))
		if bucket != nil {
			granted, wait := bucket.Take(now, n)
			if granted == 0 {
				clk.Sleep(ctx, min(wait, deadline.Sub(now)))
				continue
			}
			n = granted
		}
		err := progRunLive(fd, g.tmpl.frame, &g.md, uint32(n), uint32(g.cfg.Batch))
		st.Calls++
		if err == nil {
			attempted += uint64(n)
			done += uint64(n)
			continue
		}
		if err != unix.EINTR {
			st.note(err)
			break
		}
		// Interrupted part way: the counter says how far it got.
		sent, _, cerr := g.counters()
		if cerr != nil {
			return st, cerr
		}
		attempted += sent - done
		done = sent
	}
	elapsed := clk.Now().Sub(start)
	st.CPU = threadCPU() - cpu0
	st.CPUS = st.CPU.Seconds()
	sent1, bad1, err := g.counters()
	if err != nil {
		return st, err
	}
	st.Sent, st.Errors = sent1-sent0, bad1-bad0
	if x1, ok, _ := ReadXmitStats(g.cfg.Iface); ok && haveX {
		st.HaveXmit = true
		st.Delivered, st.Refused = x1.Xmit-x0.Xmit, x1.Errors-x0.Errors
	}
	st.Elapsed = elapsed
	if elapsed > 0 {
		st.PPS = float64(st.Sent) / elapsed.Seconds()
	}
	return st, nil
}

func (st *Stats) note(err error) {
	if st.FirstError == "" {
		st.FirstError = fmt.Sprintf("live: BPF_PROG_RUN: %v", err)
	}
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
	return errors.Join(err, g.objs.Close())
}
