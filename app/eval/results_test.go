package eval

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// synthetic is a Results as a quick run would leave it, with made-up
// figures: (a) fails at 20 kpps, (b) at 100, (c) at 400, (c) in run 2
// never fails.
func synthetic() *Results {
	cfg := Quick()
	cfg.Runs = 2
	cfg.Variants = []Variant{QuicGo, HostAlways, XDP}
	r := &Results{Config: cfg, Env: Env{Kernel: "test", CPUs: 2}}
	capacity := map[Variant]float64{QuicGo: 20e3, HostAlways: 100e3, XDP: 400e3}
	for run := 1; run <= 2; run++ {
		for _, v := range cfg.Variants {
			c := capacity[v]
			if v == XDP && run == 2 {
				c = 1e12
			}
			var steps []Step
			for _, rate := range cfg.Ladder {
				s := Step{Variant: v, Run: run, Phase: "ladder", Target: rate, SentPPS: rate, Sent: uint64(rate), Retries: uint64(min(rate, c)),
					Benign: 20, SetupP50: time.Duration(2+rate/c*100) * time.Millisecond, SetupP99: 10 * time.Millisecond,
					HostCores: min(1, 0.1+rate/c), NetRX: []uint64{1, 2}}
				if rate > c {
					s.Loss = 1 - c/rate
					s.BenignFailed = 3
				}
				s.judge(cfg.MaxLoss)
				steps = append(steps, s)
				if !s.OK {
					break
				}
			}
			r.Steps = append(r.Steps, steps...)
			r.Outcomes = append(r.Outcomes, outcome(steps))
		}
	}
	r.Generator = []Generator{{Mode: "random-cids", SentPPS: 3e6, Cores: 0.8, CPUPerFrame: 260}}
	for _, v := range []Variant{HostAlways, XDP} {
		for _, rate := range cfg.TransferRates {
			for _, size := range cfg.TransferSizes {
				for i := range cfg.TransferRequests {
					ms := time.Duration(1+size/(1<<17)) * time.Millisecond
					if v == XDP {
						ms += ms / 50
					}
					r.Transfers = append(r.Transfers, Transfer{Variant: v, Rate: rate, Size: size, Index: i, Setup: 2 * time.Millisecond, Total: 2*time.Millisecond + ms})
				}
			}
		}
	}
	r.KillAt = 3 * time.Second
	for i := range 60 {
		t := Timeline{At: time.Duration(i) * 100 * time.Millisecond, Setup: 2 * time.Millisecond}
		if i == 30 {
			t.Setup = 30 * time.Millisecond
		}
		r.FailOpen = append(r.FailOpen, t)
	}
	return r
}

func TestSummariesAndRatios(t *testing.T) {
	r := synthetic()
	sums := r.Summaries()
	if len(sums) != 3 || sums[0].Variant != QuicGo || sums[2].Variant != XDP {
		t.Fatalf("summaries %+v", sums)
	}
	// The ladder's last sustained rungs: (a) 10k, (b) 40k, (c) 160k in run
	// 1 and the top of the ladder in run 2.
	if sums[0].MaxKpps != 10 || sums[1].MaxKpps != 40 {
		t.Errorf("(a), (b) medians %v, %v; want 10, 40", sums[0].MaxKpps, sums[1].MaxKpps)
	}
	if want := (160 + 2560) / 2.0; sums[2].MaxKpps != want || sums[2].NeverFailed != 1 {
		t.Errorf("(c) median %v, never failed %d; want %v, 1", sums[2].MaxKpps, sums[2].NeverFailed, want)
	}
	var cb *Ratio
	for _, q := range r.Ratios() {
		if q.Name == "(c)/(b)" {
			cb = &q
		}
	}
	if cb == nil || math.Abs(cb.Value-1360.0/40) > 1e-9 || !cb.LowerBound {
		t.Fatalf("(c)/(b) = %+v", cb)
	}
}

func TestOverheads(t *testing.T) {
	o := synthetic().Overheads()
	if len(o) != len(Quick().TransferRates)*len(Quick().TransferSizes) {
		t.Fatalf("%d overheads", len(o))
	}
	for _, x := range o {
		if x.Normalized <= 0 || x.Normalized > 0.05 {
			t.Errorf("%+v: want the 2 %% made up above", x)
		}
	}
}

func TestWriteAndCheck(t *testing.T) {
	dir := t.TempDir()
	r := synthetic()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	if err := CheckOutputs(dir, r.Config.Variants, nil); err != nil {
		t.Fatalf("outputs of a good run: %v", err)
	}
	// Read back, write again: the same figures.
	back, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != len(r.Steps) || back.Summaries()[2].MaxKpps != r.Summaries()[2].MaxKpps {
		t.Fatal("results.json does not round-trip")
	}
	if err := CheckOutputs(dir, append(r.Config.Variants, Split), nil); err == nil || !strings.Contains(err.Error(), "d-split") {
		t.Errorf("a missing variant: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A series whose x goes back: caught.
	p := filepath.Join(dir, FileFailOpen)
	b, err := os.ReadFile(p)
	must(err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines[2], lines[3] = lines[3], lines[2]
	must(os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	if err := CheckOutputs(dir, r.Config.Variants, nil); err == nil || !strings.Contains(err.Error(), "not ascending") {
		t.Errorf("an unsorted timeline: %v", err)
	}
	must(os.WriteFile(p, b, 0o644))
	// A missing plot and a blank one: caught.
	must(os.Remove(filepath.Join(dir, "fig12_cpu.svg")))
	if err := CheckOutputs(dir, r.Config.Variants, nil); err == nil || !strings.Contains(err.Error(), "fig12_cpu.svg") {
		t.Errorf("a missing SVG: %v", err)
	}
	// Skipped figures are not looked for.
	if err := CheckOutputs(dir, r.Config.Variants, []string{"9"}); err != nil {
		t.Errorf("with figure 9 skipped: %v", err)
	}
}
