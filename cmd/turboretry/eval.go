//go:build eval

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/turboretry/turboretry/app/eval"
)

func init() {
	register(&command{
		name:    "eval",
		summary: "run the paper's evaluation (figures 9-13) in test namespaces and plot it",
		run:     runEval,
	})
}

const evalSynopsis = `turboretry eval [--quick] [--out DIR] [--quicgo-server PROGRAM] [--runs N] [--step D]
         [--variants a,b,...] [--skip 9,11,13] [--two-queues] [--benign-rate R]
         [--generator-cpus L] [--client-cpus L] [--server-cpus L] [--agent-cpus L]
       turboretry eval --replot [--out DIR]

Runs the TurboRetry paper's evaluation on this machine (Linux >= 5.18, root): every
defence variant in network namespaces of its own, pinned to its CPUs, flooded with
spoofed Initials from 198.18.0.0/15 by the BPF_PROG_RUN live-frames generator while a
benign HTTP/3 client opens fresh connections at a steady rate, each with a deadline.
Writes CSV files, PNG and SVG plots and summary.json into DIR (default eval-out):
  fig9   maximum sustained attack rate per variant (and the ratios between them)
  fig10  benign setup latency against attack rate
  fig11  transfer latency by file size under attack, host Retry vs agent (+ table 4)
  fig12  the defender's CPU against attack rate
  fig13  the fail-open timeline, the split agent SIGKILLed part way
Variants: a-quicgo (needs --quicgo-server, a test-only program: make eval builds it),
b-host-always, b-host-auto, c-xdp, d-split, and with --two-queues c-xdp-2q, d-split-2q.
--quick finishes in a few minutes; the default is the full run of docs/evaluation.md.`

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("eval", evalSynopsis, stderr)
	quick := fs.Bool("quick", false, "a short run: one search per variant, 1 s steps, few requests")
	out := fs.String("out", "eval-out", "write the CSV files and plots into `DIR`")
	quicgo := fs.String("quicgo-server", "", "`PROGRAM` serving variant (a) with quic-go (flags --addr --cert --key --root)")
	runs := fs.Int("runs", 0, "maximum-rate searches per variant, `N` (0: 1 with --quick, else 3)")
	step := fs.Duration("step", 0, "how long each attack rate is held (0: 1s with --quick, else 5s)")
	variants := fs.String("variants", "", "comma-separated variants (default: all)")
	skip := fs.String("skip", "", "comma-separated figures not to run: 9 (with 10 and 12), 11, 13")
	twoQ := fs.Bool("two-queues", false, "add (c) and (d) with two receive queues to figure 9 (always on in the full run)")
	benign := fs.Float64("benign-rate", 0, "benign connections per second during each step (0: 20 with --quick, else 50)")
	genCPUs := fs.String("generator-cpus", "0", "CPUs of the generator threads, `LIST`")
	clientCPUs := fs.String("client-cpus", "0", "CPUs of the benign client (this process), `LIST`")
	serverCPUs := fs.String("server-cpus", "1", "CPUs of the server process and its NAPI thread, `LIST`")
	agentCPUs := fs.String("agent-cpus", "1", "CPUs of (d)'s agent process and its NAPI threads, `LIST`")
	gomaxprocs := fs.Int("gomaxprocs", 2, "GOMAXPROCS of the Go servers and the agent, `N` (0: the runtime's default)")
	replot := fs.Bool("replot", false, "measure nothing: redraw the CSV files and plots in --out from its results.json")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return usageError(fs, "unexpected argument %q", pos[0])
	}
	if *replot {
		res, err := eval.ReadResults(*out)
		if err == nil {
			err = res.Write(*out)
		}
		if err != nil {
			fmt.Fprintln(stderr, "eval:", err)
			return exitFail
		}
		return exitOK
	}
	cfg := eval.Full()
	if *quick {
		cfg = eval.Quick()
	}
	set := setFlags(fs)
	cfg.GoMaxProcs = *gomaxprocs
	if *runs < 0 || *step < 0 || *benign < 0 || *gomaxprocs < 0 {
		return usageError(fs, "--runs, --step, --benign-rate and --gomaxprocs must not be negative")
	}
	if *runs > 0 {
		cfg.Runs = *runs
	}
	if *step > 0 {
		cfg.Step = *step
	}
	if *benign > 0 {
		cfg.BenignRate = *benign
	}
	if set["two-queues"] {
		cfg.TwoQueues = *twoQ
	}
	for _, c := range []struct {
		flag string
		val  string
		dst  *[]int
	}{{"generator-cpus", *genCPUs, &cfg.GeneratorCPUs}, {"client-cpus", *clientCPUs, &cfg.ClientCPUs},
		{"server-cpus", *serverCPUs, &cfg.ServerCPUs}, {"agent-cpus", *agentCPUs, &cfg.AgentCPUs}} {
		l, err := parseCPUList(c.val)
		if err != nil {
			return usageError(fs, "--%s: %v", c.flag, err)
		}
		*c.dst = l
	}
	if *variants != "" {
		for _, v := range strings.Split(*variants, ",") {
			if !knownVariant(eval.Variant(v)) {
				return usageError(fs, "--variants: unknown variant %q", v)
			}
			cfg.Variants = append(cfg.Variants, eval.Variant(v))
		}
	}
	if *skip != "" {
		for _, s := range strings.Split(*skip, ",") {
			if s != "9" && s != "11" && s != "13" {
				return usageError(fs, "--skip: want 9, 11 or 13, not %q", s)
			}
			cfg.Skip = append(cfg.Skip, s)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return exitFail
	}
	cfg.Out = *out
	cfg.Turboretry = []string{exe}
	if *quicgo != "" {
		cfg.QuicGoServer = strings.Fields(*quicgo)
	} else {
		fmt.Fprintln(stderr, "eval: no --quicgo-server: variant (a) is skipped")
	}
	cfg.Log = stderr
	cfg.Command = "turboretry eval " + strings.Join(args, " ")
	start := time.Now()
	res, err := eval.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFail
	}
	if err := eval.CheckOutputs(*out, res.Config.Variants, res.Config.Skip); err != nil {
		fmt.Fprintln(stderr, "eval: the outputs are not what they should be:", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "eval: done in %v; results in %s\n", time.Since(start).Round(time.Second), *out)
	for _, s := range res.Summaries() {
		bound := ""
		if s.NeverFailed > 0 {
			bound = " (never failed in some run: a lower bound)"
		}
		fmt.Fprintf(stdout, "  %-28s max sustained %8.1f kpps%s\n", s.Variant.Label(), s.MaxKpps, bound)
	}
	for _, r := range res.Ratios() {
		ge := ""
		if r.LowerBound {
			ge = ">= "
		}
		fmt.Fprintf(stdout, "  %-16s %s%.2fx\n", r.Name, ge, r.Value)
	}
	return exitOK
}

func knownVariant(v eval.Variant) bool {
	for _, k := range append(append([]eval.Variant(nil), eval.AllVariants...), eval.XDP2Q, eval.Split2Q) {
		if v == k {
			return true
		}
	}
	return false
}

// parseCPUList parses "0", "0,1" or "0-3".
func parseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU range %q", part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
