package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/netns"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/flood/live"
)

func netipAddrPort(a netip.Addr, p uint16) netip.AddrPort { return netip.AddrPortFrom(a, p) }

// runner holds what the experiments of one Run share.
type runner struct {
	cfg    *Config
	files  *files
	pool   *flood.Generator // complete Initials for Pool mode
	logDir string
	seq    atomic.Int32
	res    *Results
}

// Run runs the evaluation of cfg in network namespaces it creates (root,
// Linux >= 5.18) and writes the CSV files and plots into cfg.Out.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("eval: needs root (network namespaces, XDP, BPF_PROG_RUN)")
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.GoMaxProcs > 0 {
		cfg.ChildEnv = append(slices.Clone(cfg.ChildEnv), fmt.Sprintf("GOMAXPROCS=%d", cfg.GoMaxProcs))
	}
	r := &runner{cfg: &cfg, logDir: filepath.Join(cfg.Out, "logs")}
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "turboretry-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if r.files, err = newFiles(work, cfg.TransferSizes); err != nil {
		return nil, err
	}
	// 4096 complete Initials: a DCID repeats every 4096 frames or so.
	if r.pool, err = flood.NewGenerator(flood.GeneratorConfig{PoolSize: 4096}); err != nil {
		return nil, err
	}
	// This process is the benign client (and starts the generator's
	// threads, which pin themselves): keep it on the client CPUs.
	if err := pinSelf(cfg.ClientCPUs, cfg.Nice); err != nil {
		return nil, fmt.Errorf("eval: pinning to the client CPUs: %w", err)
	}
	r.res = &Results{Env: environment(&cfg), Config: cfg}
	r.res.Env.LoadBefore = loadAverage()
	start := time.Now()

	err = r.experiments(ctx)
	r.res.Env.LoadAfter = loadAverage()
	r.res.Env.Duration = time.Since(start)
	// What was measured is written also when an experiment failed.
	if werr := r.res.Write(cfg.Out); werr != nil {
		return r.res, errors.Join(err, werr)
	}
	return r.res, err
}

// experiments runs the figures that are not skipped, in order.
func (r *runner) experiments(ctx context.Context) error {
	cfg := r.cfg
	if !cfg.skip("9") {
		if err := r.generatorAlone(ctx); err != nil {
			return err
		}
		for run := 1; run <= cfg.Runs; run++ {
			for _, v := range cfg.Variants {
				if err := r.searchVariant(ctx, v, run); err != nil {
					return fmt.Errorf("eval: %s run %d: %w", v, run, err)
				}
			}
		}
	}
	if !cfg.skip("11") {
		if err := r.transfers(ctx); err != nil {
			return fmt.Errorf("eval: figure 11: %w", err)
		}
	}
	if !cfg.skip("13") {
		if err := r.failOpen(ctx); err != nil {
			return fmt.Errorf("eval: figure 13: %w", err)
		}
	}
	return nil
}

func (r *runner) logf(format string, a ...any) {
	fmt.Fprintf(r.cfg.Log, "eval: "+format+"\n", a...)
}

// tag names one network: unique to this process and call, short enough
// that the NAPI thread names of its devices stay recognizable.
func (r *runner) tag() string {
	return fmt.Sprintf("e%04x%02d", os.Getpid()&0xffff, r.seq.Add(1)%100)
}

// cpusFor returns the server and generator CPUs of variant v: with two
// queues the flood must come from two CPUs, so the generator, the server
// and the NAPI threads share all of them.
func (r *runner) cpusFor(v Variant) (server, agent, gen []int) {
	c := r.cfg
	if v.Queues() < 2 {
		return c.ServerCPUs, c.AgentCPUs, c.GeneratorCPUs[:1]
	}
	all := slices.Compact(slices.Sorted(slices.Values(append(append(slices.Clone(c.ServerCPUs), c.GeneratorCPUs...), c.AgentCPUs...))))
	return all, all, all
}

// setup builds the network for v, starts its server and the generator;
// teardown undoes it.
func (r *runner) setup(ctx context.Context, v Variant) (*network, *server, *attacker, error) {
	srvCPU, agentCPU, genCPU := r.cpusFor(v)
	cfg := *r.cfg
	cfg.ServerCPUs, cfg.AgentCPUs = srvCPU, agentCPU
	n, err := newNetwork(&cfg, r.tag(), v, v.Queues())
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := startServer(ctx, &cfg, r.files, n, v, r.logDir)
	if err != nil {
		n.close()
		return nil, nil, nil, err
	}
	a, err := newAttacker(n, r.pool, v.FloodMode(), genCPU)
	if err != nil {
		s.stop()
		n.close()
		return nil, nil, nil, err
	}
	return n, s, a, nil
}

func teardown(n *network, s *server, a *attacker) {
	a.close()
	s.stop()
	n.close()
}

// generatorAlone measures the generator with nothing but an XDP drop on
// the server's veth (no server), in both modes.
func (r *runner) generatorAlone(ctx context.Context) error {
	for _, mode := range []string{"random-cids", "pool"} {
		n, err := newNetwork(r.cfg, r.tag(), HostAlways, 1)
		if err != nil {
			return err
		}
		err = func() error {
			defer n.close()
			var sink io.Closer
			if err := netns.In(n.server, func() (err error) {
				sink, err = live.AttachDropSink(n.srvDev)
				return err
			}); err != nil {
				return err
			}
			defer sink.Close()
			if err := n.pinNAPI(); err != nil {
				return err
			}
			a, err := newAttacker(n, r.pool, mode, r.cfg.GeneratorCPUs[:1])
			if err != nil {
				return err
			}
			defer a.close()
			st, err := a.flood(ctx, 0, r.cfg.Step)
			if err != nil {
				return err
			}
			g := Generator{Mode: mode, SentPPS: st.PPS, Refused: st.Refused, Delivered: st.Delivered}
			if st.Elapsed > 0 && st.Sent > 0 {
				g.Cores = st.CPU.Seconds() / st.Elapsed.Seconds()
				g.CPUPerFrame = time.Duration(int64(st.CPU) / int64(st.Sent))
			}
			r.res.Generator = append(r.res.Generator, g)
			r.logf("generator alone (%s): %.2f Mpps, %.2f cores, %v CPU per frame", mode, g.SentPPS/1e6, g.Cores, g.CPUPerFrame)
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// searchVariant runs figure 9's search for v once; its steps feed
// figures 10 and 12.
func (r *runner) searchVariant(ctx context.Context, v Variant, run int) error {
	r.logf("%s run %d: starting", v, run)
	n, s, a, err := r.setup(ctx, v)
	if err != nil {
		return err
	}
	// s is replaced when the server restarts: tear down the last one.
	defer func() { teardown(n, s, a) }()
	var failed error
	restart, last := false, ""
	step := func(rate float64, phase string) Step {
		if failed != nil || ctx.Err() != nil {
			return Step{Variant: v, Run: run, Phase: phase, Target: rate, Reason: "aborted"}
		}
		if restart {
			// A failed step leaves a server backlogged: the next starts fresh.
			s.scrapeMetrics(r.logDir, last)
			s.stop()
			fresh, err := startServer(ctx, r.cfg, r.files, n, v, r.logDir)
			if err != nil {
				failed = err
				return Step{Variant: v, Run: run, Phase: phase, Target: rate, Reason: "aborted"}
			}
			s, restart = fresh, false
		}
		st, err := runStep(ctx, r.cfg, s, a, v, run, rate, phase)
		if err != nil {
			failed = err
		}
		restart, last = !st.OK, fmt.Sprintf("run%d-%s-%.0fpps", run, phase, rate)
		r.logf("%s run %d %s: target %.0f pps, sent %.0f (refused %d), answered %.1f%%, benign %d/%d failed %s, host %.2f agent %.2f cores, gen %.2f cores: %s",
			v, run, phase, rate, st.SentPPS, st.Refused, 100*(1-st.Loss), st.BenignFailed, st.Benign, st.FirstErr,
			st.HostCores, st.AgentCores, st.GenCores, okWord(st))
		return st
	}
	steps, out := search(r.cfg.Ladder, r.cfg.Bisect, step)
	s.scrapeMetrics(r.logDir, fmt.Sprintf("run%d", run))
	var done []Step // the steps measured, kept also when the search broke off
	for _, st := range steps {
		if st.Reason != "aborted" {
			done = append(done, st)
		}
	}
	r.res.Steps = append(r.res.Steps, done...)
	if failed != nil {
		return failed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.res.Outcomes = append(r.res.Outcomes, out)
	r.logf("%s run %d: max %.0f pps, failed at %.0f pps (%s)", v, run, out.MaxPPS, out.FailedPPS, out.Reason)
	return nil
}

func okWord(s Step) string {
	if s.OK {
		return "sustained"
	}
	return "FAILED (" + s.Reason + ")"
}

// transfers is figure 11: the files of every size, fetched on fresh
// connections one after the other while the flood runs, with the host's
// Retry (b) and with the agent (c).
func (r *runner) transfers(ctx context.Context) error {
	for _, v := range []Variant{HostAlways, XDP} {
		if err := r.transfersOf(ctx, v); err != nil {
			return err
		}
	}
	return nil
}

// transferLimit bounds one transfer of figure 11 (10 MB take a while on
// a loaded machine).
const transferLimit = 30 * time.Second

func (r *runner) transfersOf(ctx context.Context, v Variant) error {
	n, s, a, err := r.setup(ctx, v)
	if err != nil {
		return err
	}
	defer teardown(n, s, a)
	for _, rate := range r.cfg.TransferRates {
		floodCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		if rate > 0 {
			go func() {
				_, err := a.flood(floodCtx, rate, 10*time.Minute) // cancelled when the requests are done
				done <- err
			}()
			time.Sleep(200 * time.Millisecond)
		} else {
			done <- nil
		}
		for _, size := range r.cfg.TransferSizes {
			for i := range r.cfg.TransferRequests {
				q := s.client.get(ctx, "/"+sizeName(size), transferLimit)
				if q.Err == "" && q.Bytes != int64(size) {
					q.Err = fmt.Sprintf("got %d bytes of %d", q.Bytes, size)
				}
				r.res.Transfers = append(r.res.Transfers, Transfer{Variant: v, Rate: rate, Size: size, Index: i,
					Setup: q.Setup, Total: q.Total, Err: q.Err})
			}
		}
		stop()
		if err := <-done; err != nil {
			return err
		}
		r.logf("%s transfers at %.0f pps done", v, rate)
	}
	return nil
}

// failOpen is figure 13: benign requests at a fixed rate against (d), the
// agent process SIGKILLed part way; every request's setup latency by the
// time it started.
func (r *runner) failOpen(ctx context.Context) error {
	v := Split
	n, s, a, err := r.setup(ctx, v)
	if err != nil {
		return err
	}
	defer teardown(n, s, a)
	start := time.Now()
	killed := make(chan time.Time, 1)
	go func() {
		select {
		case <-time.After(r.cfg.FailOpenKillAt):
			s.agent.kill()
			killed <- time.Now()
		case <-ctx.Done():
			killed <- time.Time{}
		}
	}()
	streamCtx, cancel := context.WithTimeout(ctx, r.cfg.FailOpenFor)
	reqs := s.client.stream(streamCtx, r.cfg.FailOpenRate, "/", r.cfg.BenignDeadline)
	cancel()
	kill := <-killed
	if kill.IsZero() {
		return ctx.Err()
	}
	r.res.KillAt = kill.Sub(start)
	for _, q := range reqs {
		r.res.FailOpen = append(r.res.FailOpen, Timeline{At: q.Start.Sub(start), Setup: q.Setup, Total: q.Total, Err: q.Err})
	}
	slices.SortFunc(r.res.FailOpen, func(a, b Timeline) int { return int(a.At - b.At) })
	r.logf("fail-open: %d requests, agent killed at %v", len(reqs), r.res.KillAt.Round(time.Millisecond))
	return nil
}

// environment describes the machine for the output.
func environment(cfg *Config) Env {
	e := Env{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Command: cfg.Command}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return e
}
