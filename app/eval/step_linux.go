package eval

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/turboretry/turboretry/internal/netns"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/flood/live"
)

// attacker is the live-frames generator in the client namespace.
type attacker struct {
	gen *live.Generator
	n   *network
}

// newAttacker loads the generator for mode ("pool" or "random-cids"),
// sending from one pinned thread per CPU of cpus.
func newAttacker(n *network, pool *flood.Generator, mode string, cpus []int) (*attacker, error) {
	m := live.RandomCIDs
	if mode == "pool" {
		m = live.Pool
	}
	dst, err := net.ParseMAC(macServer)
	if err != nil {
		return nil, err
	}
	a := &attacker{n: n}
	err = netns.In(n.client, func() (err error) {
		a.gen, err = live.New(live.Config{Iface: n.cliDev, Target: netipAddrPort(ipServer, serverPort), Spoof: spoofNet,
			DstMAC: dst, Mode: m, Generator: pool, CPUs: cpus})
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// flood sends at rate (0: unpaced) for d.
func (a *attacker) flood(ctx context.Context, rate float64, d time.Duration) (live.Stats, error) {
	count := uint64(1) << 40 // bounded by d
	if rate > 0 {
		count = uint64(rate*d.Seconds()) + 1
	}
	return a.gen.Run(ctx, flood.RunConfig{Count: count, Duration: d, Rate: rate})
}

func (a *attacker) close() error { return a.gen.Close() }

// settle is how long a step waits after the flood for the last Retries
// (and queued work) before it reads the counters.
const settle = 300 * time.Millisecond

// runStep holds rate against s for cfg.Step with the benign stream beside
// it (index.html on fresh connections at cfg.BenignRate, each within
// cfg.BenignDeadline).
func runStep(ctx context.Context, cfg *Config, s *server, a *attacker, v Variant, run int, rate float64, phase string) (Step, error) {
	st := Step{Variant: v, Run: run, Phase: phase, Target: rate}
	r0, o0, err := s.net.sink.Counts()
	if err != nil {
		return st, err
	}
	h0, ag0 := s.cpu()
	irq0 := netRXSoftirqs()
	rb0 := udpRcvbufErrors(s.proc.pid())
	t0 := time.Now()

	benignCtx, stopBenign := context.WithCancel(ctx)
	defer stopBenign()
	reqs := make(chan []request, 1)
	go func() {
		// Let the flood reach its rate before the first request.
		select {
		case <-time.After(min(200*time.Millisecond, cfg.Step/5)):
		case <-benignCtx.Done():
			reqs <- nil
			return
		}
		reqs <- s.client.stream(benignCtx, cfg.BenignRate, "/", cfg.BenignDeadline)
	}()
	var fs live.Stats
	if rate > 0 {
		if fs, err = a.flood(ctx, rate, cfg.Step); err != nil {
			return st, fmt.Errorf("eval: flood at %.0f pps: %w", rate, err)
		}
	} else {
		select {
		case <-time.After(cfg.Step):
		case <-ctx.Done():
		}
	}
	stopBenign()
	select {
	case <-time.After(settle):
	case <-ctx.Done():
	}
	wall := time.Since(t0)
	r1, o1, err := s.net.sink.Counts()
	if err != nil {
		return st, err
	}
	h1, ag1 := s.cpu()
	irq1 := netRXSoftirqs()
	st.RcvbufErrors = udpRcvbufErrors(s.proc.pid()) - rb0
	rs := <-reqs

	st.Sent, st.SentPPS, st.Delivered, st.Refused = fs.Sent, fs.PPS, fs.Delivered, fs.Refused
	if fs.Elapsed > 0 {
		st.GenCores = fs.CPU.Seconds() / fs.Elapsed.Seconds()
	}
	st.GenShort = rate > 0 && fs.PPS < 0.9*rate
	st.Retries, st.Other = r1-r0, o1-o0
	switch {
	case st.Sent == 0:
	case v.FloodMode() == "pool":
		st.Loss = min(1, float64(st.Refused+st.RcvbufErrors)/float64(st.Sent))
	default:
		st.Loss = max(0, 1-float64(st.Retries)/float64(st.Sent))
	}
	st.HostCores = (h1 - h0).Seconds() / wall.Seconds()
	st.AgentCores = (ag1 - ag0).Seconds() / wall.Seconds()
	if len(irq0) == len(irq1) {
		st.NetRX = make([]uint64, len(irq1))
		for i := range irq1 {
			st.NetRX[i] = irq1[i] - irq0[i]
		}
	}
	var setups []time.Duration
	for _, r := range rs {
		st.Benign++
		if r.Err != "" {
			st.BenignFailed++
			if st.FirstErr == "" {
				st.FirstErr = r.Err
			}
			continue
		}
		setups = append(setups, r.Setup)
	}
	st.SetupP50, st.SetupP99 = percentile(setups, 0.5), percentile(setups, 0.99)
	st.judge(cfg.MaxLoss)
	return st, nil
}
