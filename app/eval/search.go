package eval

import (
	"math"
	"slices"
	"time"
)

// Step is one attack rate held against one variant, with the benign
// stream beside it: a row of steps.csv.
type Step struct {
	Variant Variant
	Run     int
	Phase   string  // "ladder" or "bisect"
	Target  float64 // packets per second asked of the generator (0: no attack)

	// The generator: frames sent (its own count), their rate, the frames
	// the server's veth took and refused (its ring full), its CPU in cores.
	Sent      uint64
	SentPPS   float64
	Delivered uint64
	Refused   uint64
	GenCores  float64
	// GenShort: the generator sent less than 90 % of the target.
	GenShort bool

	// The defender's answers seen by the reply sink, the datagrams the
	// server namespace's UDP sockets dropped for a full buffer, and the
	// share of the flood lost: left without a Retry, or for pool-mode
	// floods refused by the server's veth or dropped at a socket (see
	// Variant.FloodMode).
	Retries      uint64
	Other        uint64
	RcvbufErrors uint64
	Loss         float64

	// The benign stream.
	Benign, BenignFailed int
	SetupP50, SetupP99   time.Duration
	FirstErr             string

	// The defender's CPU in cores (CPU seconds per second): the host
	// (server process and its veth's NAPI threads) and, in (d), the agent
	// process and its ports' NAPI threads.
	HostCores, AgentCores float64
	// NetRX counts NET_RX softirqs per CPU during the step.
	NetRX []uint64

	// OK: no benign failure and Loss within the configured bound.
	OK     bool
	Reason string // why not OK: "benign", "loss" or both
}

// Outcome is one search's result: a row of fig9_runs.csv.
type Outcome struct {
	Variant Variant
	Run     int
	// MaxPPS is the highest rate the generator sent in a sustained step
	// (0 if even the lowest attack failed); FailedPPS the lowest sent rate
	// of a failed step (0 if none failed: then MaxPPS is a lower bound).
	MaxPPS, FailedPPS float64
	Reason            string
	// GenShortAtFailure: at the failing rate the generator itself fell
	// short of the target, so the failure is not clearly the defender's.
	GenShortAtFailure bool
	// Failed: some step failed (also the one without attack).
	Failed bool
}

// NeverFailed reports whether the search ended without a failed step.
func (o Outcome) NeverFailed() bool { return !o.Failed }

// stepFunc holds one rate (0: no attack) and reports the step.
type stepFunc func(rate float64, phase string) Step

// search climbs the ladder until a step fails, then bisects between the
// last sustained and the first failed target bisect times.
func search(ladder []float64, bisect int, step stepFunc) ([]Step, Outcome) {
	var steps []Step
	var good, bad float64
	for _, r := range ladder {
		s := step(r, "ladder")
		steps = append(steps, s)
		if !s.OK {
			bad = r
			break
		}
		good = r
	}
	if bad > 0 {
		for range bisect {
			mid := bad / 2
			if good > 0 {
				mid = math.Sqrt(good * bad) // the ladder is geometric
			}
			s := step(mid, "bisect")
			steps = append(steps, s)
			if s.OK {
				good = mid
			} else {
				bad = mid
			}
		}
	}
	return steps, outcome(steps)
}

// outcome summarizes a search's steps.
func outcome(steps []Step) Outcome {
	var o Outcome
	if len(steps) > 0 {
		o.Variant, o.Run = steps[0].Variant, steps[0].Run
	}
	for _, s := range steps {
		if !s.OK {
			o.Failed = true
		}
		if s.Target == 0 {
			if !s.OK && o.Reason == "" {
				o.Reason = "no-attack " + s.Reason
			}
			continue
		}
		if s.OK {
			o.MaxPPS = max(o.MaxPPS, s.SentPPS)
			continue
		}
		if o.FailedPPS == 0 || s.SentPPS < o.FailedPPS {
			o.FailedPPS, o.Reason, o.GenShortAtFailure = s.SentPPS, s.Reason, s.GenShort
		}
	}
	return o
}

// outcomesOf groups steps by variant and run, in order of appearance,
// and summarizes each group.
func outcomesOf(steps []Step) []Outcome {
	type key struct {
		v   Variant
		run int
	}
	var order []key
	groups := map[key][]Step{}
	for _, s := range steps {
		k := key{s.Variant, s.Run}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	out := make([]Outcome, 0, len(order))
	for _, k := range order {
		out = append(out, outcome(groups[k]))
	}
	return out
}

// judge sets s.OK and s.Reason from its benign failures and loss.
func (s *Step) judge(maxLoss float64) {
	var why []string
	if s.BenignFailed > 0 {
		why = append(why, "benign")
	}
	if s.Target > 0 && s.Loss > maxLoss {
		why = append(why, "loss")
	}
	s.OK = len(why) == 0
	s.Reason = ""
	for i, w := range why {
		if i > 0 {
			s.Reason += "+"
		}
		s.Reason += w
	}
}

// percentile returns the p-th percentile (0..1) of ds by nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
