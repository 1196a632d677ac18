package eval

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Env describes the machine and the run.
type Env struct {
	Kernel, CPUModel, GoVersion string
	CPUs                        int
	// LoadBefore and LoadAfter are the 1-minute load averages: on a shared
	// machine they say how much other work competed.
	LoadBefore, LoadAfter float64
	Duration              time.Duration
	Command               string
}

// Generator is the generator alone into an XDP drop: a row of
// generator.csv.
type Generator struct {
	Mode        string
	SentPPS     float64
	Cores       float64
	CPUPerFrame time.Duration
	Delivered   uint64
	Refused     uint64
}

// Transfer is one request of figure 11.
type Transfer struct {
	Variant      Variant
	Rate         float64
	Size         int
	Index        int
	Setup, Total time.Duration
	Err          string
}

// Timeline is one request of figure 13, At after the first one started.
type Timeline struct {
	At, Setup, Total time.Duration
	Err              string
}

// Results is everything a Run measured.
type Results struct {
	Env       Env
	Config    Config
	Generator []Generator
	Steps     []Step
	Outcomes  []Outcome
	Transfers []Transfer
	FailOpen  []Timeline
	KillAt    time.Duration
}

// Summary is the per-variant figure 9 result (medians over runs).
type Summary struct {
	Variant           Variant
	Runs              int
	MaxKpps           float64 // median of the runs' MaxPPS
	MinKpps, TopKpps  float64 // the runs' smallest and largest MaxPPS
	FailedKpps        float64 // median of the runs' FailedPPS (failed runs only)
	NeverFailed       int     // runs without a failed step
	GenShortAtFailure int     // runs whose failing step the generator also fell short in
}

// Ratio is one measured ratio of figure 9's medians.
type Ratio struct {
	Name  string
	Value float64
	// LowerBound: the numerator never failed in some run, so the ratio is
	// at least Value.
	LowerBound bool
}

// Summaries computes figure 9 from the outcomes, in variant order.
func (r *Results) Summaries() []Summary {
	var out []Summary
	for _, v := range r.variants() {
		s := Summary{Variant: v}
		var maxes, fails []float64
		for _, o := range r.Outcomes {
			if o.Variant != v {
				continue
			}
			s.Runs++
			maxes = append(maxes, o.MaxPPS/1e3)
			if o.NeverFailed() {
				s.NeverFailed++
			} else {
				fails = append(fails, o.FailedPPS/1e3)
			}
			if o.GenShortAtFailure {
				s.GenShortAtFailure++
			}
		}
		if s.Runs == 0 {
			continue
		}
		s.MaxKpps, s.FailedKpps = median(maxes), median(fails)
		s.MinKpps, s.TopKpps = slices.Min(maxes), slices.Max(maxes)
		out = append(out, s)
	}
	return out
}

// variants lists the variants with outcomes, in the configured order.
func (r *Results) variants() []Variant {
	var vs []Variant
	for _, o := range r.Outcomes {
		if !slices.Contains(vs, o.Variant) {
			vs = append(vs, o.Variant)
		}
	}
	order := func(v Variant) int {
		if i := slices.Index(r.Config.Variants, v); i >= 0 {
			return i
		}
		return len(r.Config.Variants)
	}
	slices.SortStableFunc(vs, func(a, b Variant) int { return order(a) - order(b) })
	return vs
}

// Ratios are the paper's comparisons over figure 9's medians.
func (r *Results) Ratios() []Ratio {
	sum := map[Variant]Summary{}
	for _, s := range r.Summaries() {
		sum[s.Variant] = s
	}
	var out []Ratio
	for _, p := range [][2]Variant{{XDP, HostAlways}, {XDP, HostAuto}, {XDP, QuicGo}, {Split, HostAlways}, {Split, QuicGo}, {HostAlways, QuicGo}, {XDP2Q, XDP}} {
		a, okA := sum[p[0]]
		b, okB := sum[p[1]]
		if !okA || !okB || b.MaxKpps <= 0 {
			continue
		}
		out = append(out, Ratio{Name: fmt.Sprintf("%s/%s", short(p[0]), short(p[1])), Value: a.MaxKpps / b.MaxKpps, LowerBound: a.NeverFailed > 0})
	}
	return out
}

// short is a variant's letter name in ratios: (c)/(b), ...
func short(v Variant) string {
	switch v {
	case QuicGo:
		return "(a)"
	case HostAlways:
		return "(b)"
	case HostAuto:
		return "(b-auto)"
	case XDP:
		return "(c)"
	case Split:
		return "(d)"
	case XDP2Q:
		return "(c-2q)"
	case Split2Q:
		return "(d-2q)"
	}
	return string(v)
}

// LadderPoint is one variant at one ladder rate, the medians over runs:
// a point of figures 10 and 12.
type LadderPoint struct {
	Variant              Variant
	Target               float64
	SentPPS              float64
	SetupP50, SetupP99   float64 // ms, over the runs' steps
	Benign, BenignFailed int
	HostCores            float64
	AgentCores           float64
	Sustained            int // runs in which the step was sustained
	Runs                 int
}

// Ladder groups the ladder steps by variant and target rate.
func (r *Results) Ladder() []LadderPoint {
	var out []LadderPoint
	for _, v := range r.variants() {
		for _, rate := range r.Config.Ladder {
			p := LadderPoint{Variant: v, Target: rate}
			var sent, p50, p99, host, agent []float64
			for _, s := range r.Steps {
				if s.Variant != v || s.Phase != "ladder" || s.Target != rate {
					continue
				}
				p.Runs++
				if s.OK {
					p.Sustained++
				}
				p.Benign += s.Benign
				p.BenignFailed += s.BenignFailed
				sent = append(sent, s.SentPPS)
				if s.Benign > s.BenignFailed {
					p50 = append(p50, ms(s.SetupP50))
					p99 = append(p99, ms(s.SetupP99))
				}
				host = append(host, s.HostCores)
				agent = append(agent, s.AgentCores)
			}
			if p.Runs == 0 {
				continue
			}
			p.SentPPS, p.SetupP50, p.SetupP99 = median(sent), median(p50), median(p99)
			if len(p50) == 0 {
				p.SetupP50, p.SetupP99 = math.NaN(), math.NaN()
			}
			p.HostCores, p.AgentCores = median(host), median(agent)
			out = append(out, p)
		}
	}
	return out
}

// TransferPoint is the mean transfer latency of one variant, attack rate
// and file size: a point of figure 11.
type TransferPoint struct {
	Variant          Variant
	Rate             float64
	Size             int
	Requests, Failed int
	SetupMean        float64 // ms
	TransferMean     float64 // ms
	TransferMedian   float64 // ms
}

// TransferPoints groups figure 11's requests.
func (r *Results) TransferPoints() []TransferPoint {
	var out []TransferPoint
	for _, v := range []Variant{HostAlways, XDP} {
		for _, rate := range r.Config.TransferRates {
			for _, size := range r.Config.TransferSizes {
				p := TransferPoint{Variant: v, Rate: rate, Size: size}
				var setup, xfer []float64
				for _, t := range r.Transfers {
					if t.Variant != v || t.Rate != rate || t.Size != size {
						continue
					}
					p.Requests++
					if t.Err != "" {
						p.Failed++
						continue
					}
					setup = append(setup, ms(t.Setup))
					xfer = append(xfer, ms(t.Total-t.Setup))
				}
				if p.Requests == 0 {
					continue
				}
				p.SetupMean, p.TransferMean, p.TransferMedian = mean(setup), mean(xfer), median(xfer)
				out = append(out, p)
			}
		}
	}
	return out
}

// Overhead is table 4: (T_c - T_b) / T_b of the mean transfer latencies.
type Overhead struct {
	Rate       float64
	Size       int
	HostMs     float64
	AgentMs    float64
	Normalized float64
}

// Overheads computes table 4 from figure 11's points.
func (r *Results) Overheads() []Overhead {
	pts := r.TransferPoints()
	var out []Overhead
	for _, b := range pts {
		if b.Variant != HostAlways {
			continue
		}
		for _, c := range pts {
			if c.Variant == XDP && c.Rate == b.Rate && c.Size == b.Size && b.TransferMean > 0 && c.TransferMean > 0 {
				out = append(out, Overhead{Rate: b.Rate, Size: b.Size, HostMs: b.TransferMean, AgentMs: c.TransferMean,
					Normalized: (c.TransferMean - b.TransferMean) / b.TransferMean})
			}
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// The output files.
const (
	FileSteps     = "steps.csv"
	FileRuns      = "fig9_runs.csv"
	FileMaxRate   = "fig9_max_rate.csv"
	FileRatios    = "fig9_ratios.csv"
	FileSetup     = "fig10_setup_latency.csv"
	FileTransfer  = "fig11_transfer.csv"
	FileOverhead  = "table4_overhead.csv"
	FileCPU       = "fig12_cpu.csv"
	FileFailOpen  = "fig13_failopen.csv"
	FileGenerator = "generator.csv"
	FileSummary   = "summary.json"
	// FileResults holds every measurement, for ReadResults: the figures
	// can be redrawn without rerunning.
	FileResults = "results.json"
)

// ReadResults reads the results.json of an earlier Write.
func ReadResults(dir string) (*Results, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileResults))
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", FileResults, err)
	}
	// The outcomes are a function of the steps: recomputed, so that a
	// file from an older version summarizes as this one does.
	r.Outcomes = outcomesOf(r.Steps)
	return &r, nil
}

// Plots are the figures' base names; each is written as .png and .svg.
var Plots = []string{"fig9_max_rate", "fig10_setup_latency", "fig11_transfer", "fig12_cpu", "fig13_failopen"}

// Write writes the CSV files, the plots and summary.json into dir; a
// figure that was skipped gets neither file nor plot.
func (r *Results) Write(dir string) error {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	d := func(t time.Duration) string { return f(ms(t)) }
	tables := map[string][][]string{}
	if len(r.Outcomes) > 0 {
		rows := [][]string{{"variant", "run", "phase", "target_pps", "sent_pps", "sent", "delivered", "refused", "generator_cores", "generator_short",
			"retries", "other_replies", "udp_rcvbuf_errors", "loss", "benign", "benign_failed", "setup_p50_ms", "setup_p99_ms", "host_cores", "agent_cores",
			"net_rx_softirqs_per_cpu", "sustained", "reason", "first_error"}}
		for _, s := range r.Steps {
			irq := make([]string, len(s.NetRX))
			for i, v := range s.NetRX {
				irq[i] = strconv.FormatUint(v, 10)
			}
			rows = append(rows, []string{string(s.Variant), strconv.Itoa(s.Run), s.Phase, f(s.Target), f(s.SentPPS),
				u(s.Sent), u(s.Delivered), u(s.Refused), f(s.GenCores), strconv.FormatBool(s.GenShort), u(s.Retries), u(s.Other),
				u(s.RcvbufErrors), f(s.Loss), strconv.Itoa(s.Benign), strconv.Itoa(s.BenignFailed), d(s.SetupP50), d(s.SetupP99), f(s.HostCores),
				f(s.AgentCores), strings.Join(irq, ";"), strconv.FormatBool(s.OK), s.Reason, s.FirstErr})
		}
		tables[FileSteps] = rows
		rows = [][]string{{"variant", "run", "max_kpps", "failed_at_kpps", "reason", "never_failed", "generator_short_at_failure"}}
		for _, o := range r.Outcomes {
			rows = append(rows, []string{string(o.Variant), strconv.Itoa(o.Run), f(o.MaxPPS / 1e3), f(o.FailedPPS / 1e3), o.Reason,
				strconv.FormatBool(o.NeverFailed()), strconv.FormatBool(o.GenShortAtFailure)})
		}
		tables[FileRuns] = rows
		rows = [][]string{{"variant", "label", "queues", "runs", "median_max_kpps", "min_max_kpps", "top_max_kpps", "median_failed_at_kpps",
			"never_failed_runs", "generator_short_at_failure_runs"}}
		for _, s := range r.Summaries() {
			rows = append(rows, []string{string(s.Variant), s.Variant.Label(), strconv.Itoa(s.Variant.Queues()), strconv.Itoa(s.Runs),
				f(s.MaxKpps), f(s.MinKpps), f(s.TopKpps), f(s.FailedKpps), strconv.Itoa(s.NeverFailed), strconv.Itoa(s.GenShortAtFailure)})
		}
		tables[FileMaxRate] = rows
		rows = [][]string{{"ratio", "value", "lower_bound"}}
		for _, q := range r.Ratios() {
			rows = append(rows, []string{q.Name, f(q.Value), strconv.FormatBool(q.LowerBound)})
		}
		tables[FileRatios] = rows
		setup := [][]string{{"variant", "target_kpps", "sent_kpps", "setup_p50_ms", "setup_p99_ms", "benign", "benign_failed", "sustained_runs", "runs"}}
		cpu := [][]string{{"variant", "target_kpps", "sent_kpps", "host_cores", "agent_cores", "defender_cores", "sustained_runs", "runs"}}
		for _, p := range r.Ladder() {
			setup = append(setup, []string{string(p.Variant), f(p.Target / 1e3), f(p.SentPPS / 1e3), f(p.SetupP50), f(p.SetupP99),
				strconv.Itoa(p.Benign), strconv.Itoa(p.BenignFailed), strconv.Itoa(p.Sustained), strconv.Itoa(p.Runs)})
			cpu = append(cpu, []string{string(p.Variant), f(p.Target / 1e3), f(p.SentPPS / 1e3), f(p.HostCores), f(p.AgentCores),
				f(p.HostCores + p.AgentCores), strconv.Itoa(p.Sustained), strconv.Itoa(p.Runs)})
		}
		tables[FileSetup], tables[FileCPU] = setup, cpu
	}
	if len(r.Generator) > 0 {
		rows := [][]string{{"mode", "sent_mpps", "cores", "cpu_ns_per_frame", "delivered", "refused"}}
		for _, g := range r.Generator {
			rows = append(rows, []string{g.Mode, f(g.SentPPS / 1e6), f(g.Cores), strconv.FormatInt(g.CPUPerFrame.Nanoseconds(), 10), u(g.Delivered), u(g.Refused)})
		}
		tables[FileGenerator] = rows
	}
	if len(r.Transfers) > 0 {
		rows := [][]string{{"variant", "attack_kpps", "size_bytes", "size", "requests", "failed", "setup_mean_ms", "transfer_mean_ms", "transfer_median_ms"}}
		for _, p := range r.TransferPoints() {
			rows = append(rows, []string{string(p.Variant), f(p.Rate / 1e3), strconv.Itoa(p.Size), sizeLabel(p.Size), strconv.Itoa(p.Requests),
				strconv.Itoa(p.Failed), f(p.SetupMean), f(p.TransferMean), f(p.TransferMedian)})
		}
		tables[FileTransfer] = rows
		rows = [][]string{{"attack_kpps", "size", "host_retry_transfer_ms", "agent_transfer_ms", "normalized_overhead"}}
		for _, o := range r.Overheads() {
			rows = append(rows, []string{f(o.Rate / 1e3), sizeLabel(o.Size), f(o.HostMs), f(o.AgentMs), strconv.FormatFloat(o.Normalized, 'f', 4, 64)})
		}
		tables[FileOverhead] = rows
	}
	if len(r.FailOpen) > 0 {
		rows := [][]string{{"t_s", "setup_ms", "total_ms", "after_kill", "error"}}
		for _, t := range r.FailOpen {
			rows = append(rows, []string{strconv.FormatFloat(t.At.Seconds(), 'f', 3, 64), d(t.Setup), d(t.Total),
				strconv.FormatBool(t.At >= r.KillAt), t.Err})
		}
		tables[FileFailOpen] = rows
	}
	var errs []error
	for name, rows := range tables {
		errs = append(errs, writeCSV(filepath.Join(dir, name), rows))
	}
	errs = append(errs, r.plots(dir))
	for name, v := range map[string]any{FileSummary: r.summaryJSON(), FileResults: r} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sizeName is the served file of n bytes.
func sizeName(n int) string { return fmt.Sprintf("f%d.bin", n) }

// sizeLabel is n in KB or MB, for plots and CSV.
func sizeLabel(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d KB", n>>10)
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	err = w.WriteAll(rows)
	return errors.Join(err, f.Close())
}

// summaryJSON is summary.json: the environment and the headline figures.
func (r *Results) summaryJSON() any {
	type variantLine struct {
		Variant     Variant `json:"variant"`
		Label       string  `json:"label"`
		Runs        int     `json:"runs"`
		MaxKpps     float64 `json:"median_max_kpps"`
		FailedKpps  float64 `json:"median_failed_at_kpps"`
		NeverFailed int     `json:"never_failed_runs"`
	}
	type ratio struct {
		Name       string  `json:"name"`
		Value      float64 `json:"value"`
		LowerBound bool    `json:"lower_bound"`
	}
	out := struct {
		Kernel       string        `json:"kernel"`
		CPUModel     string        `json:"cpu_model"`
		CPUs         int           `json:"cpus"`
		Go           string        `json:"go"`
		LoadBefore   float64       `json:"load_average_before"`
		LoadAfter    float64       `json:"load_average_after"`
		DurationS    float64       `json:"duration_s"`
		Command      string        `json:"command"`
		StepS        float64       `json:"step_s"`
		BenignRate   float64       `json:"benign_rate_per_s"`
		DeadlineS    float64       `json:"benign_deadline_s"`
		MaxLoss      float64       `json:"max_loss"`
		Generator    []Generator   `json:"generator_alone"`
		Variants     []variantLine `json:"fig9"`
		Ratios       []ratio       `json:"ratios"`
		KillAtS      float64       `json:"fig13_kill_at_s,omitempty"`
		FailOpenFail int           `json:"fig13_failed_requests"`
	}{Kernel: r.Env.Kernel, CPUModel: r.Env.CPUModel, CPUs: r.Env.CPUs, Go: r.Env.GoVersion, LoadBefore: r.Env.LoadBefore,
		LoadAfter: r.Env.LoadAfter, DurationS: r.Env.Duration.Seconds(), Command: r.Env.Command, StepS: r.Config.Step.Seconds(),
		BenignRate: r.Config.BenignRate, DeadlineS: r.Config.BenignDeadline.Seconds(), MaxLoss: r.Config.MaxLoss,
		Generator: r.Generator, KillAtS: r.KillAt.Seconds()}
	for _, s := range r.Summaries() {
		out.Variants = append(out.Variants, variantLine{s.Variant, s.Variant.Label(), s.Runs, s.MaxKpps, s.FailedKpps, s.NeverFailed})
	}
	for _, q := range r.Ratios() {
		out.Ratios = append(out.Ratios, ratio(q))
	}
	for _, t := range r.FailOpen {
		if t.Err != "" {
			out.FailOpenFail++
		}
	}
	return out
}
