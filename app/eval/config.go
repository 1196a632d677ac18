package eval

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Variant is one defence under test.
type Variant string

// The variants of docs/evaluation.md.
const (
	QuicGo     Variant = "a-quicgo"       // quic-go v0.65, a Retry for every token-less Initial
	HostAlways Variant = "b-host-always"  // our server, --retry always
	HostAuto   Variant = "b-host-auto"    // our server, the default auto policy
	XDP        Variant = "c-xdp"          // our server with the integrated XDP agent
	Split      Variant = "d-split"        // our server behind a separate agent process
	XDP2Q      Variant = "c-xdp-2q"       // (c) with two receive queues (see Config.TwoQueues)
	Split2Q    Variant = "d-split-2q"     // (d) with two receive queues
	hostNever  Variant = "b-host-noretry" // latency baseline, no Retry at all
)

// AllVariants are the variants of figure 9, in plot order.
var AllVariants = []Variant{QuicGo, HostAlways, HostAuto, XDP, Split}

// Split reports whether v runs the agent as a separate process.
func (v Variant) Split() bool { return v == Split || v == Split2Q }

// Agent reports whether v has a Retry agent in front of the host.
func (v Variant) Agent() bool { return v == XDP || v == XDP2Q || v.Split() }

// Queues is the number of receive queues the variant's agent serves.
func (v Variant) Queues() int {
	if v == XDP2Q || v == Split2Q {
		return 2
	}
	return 1
}

// Label is the variant's name in plots.
func (v Variant) Label() string {
	switch v {
	case QuicGo:
		return "(a) quic-go host Retry"
	case HostAlways:
		return "(b) ours, host Retry always"
	case HostAuto:
		return "(b) ours, host auto policy"
	case XDP:
		return "(c) ours, integrated XDP agent"
	case Split:
		return "(d) ours, split agent"
	case XDP2Q:
		return "(c) XDP agent, 2 queues"
	case Split2Q:
		return "(d) split agent, 2 queues"
	case hostNever:
		return "(b) ours, no Retry"
	}
	return string(v)
}

// Short is the variant's name where space is short (figure 9's axis).
func (v Variant) Short() string {
	switch v {
	case QuicGo:
		return "(a) quic-go"
	case HostAlways:
		return "(b) host always"
	case HostAuto:
		return "(b) host auto"
	case XDP:
		return "(c) XDP agent"
	case Split:
		return "(d) split agent"
	case XDP2Q:
		return "(c) XDP, 2 queues"
	case Split2Q:
		return "(d) split, 2 queues"
	}
	return v.Label()
}

// FloodMode is which of the generator's modes a variant is flooded with:
// complete, decryptable Initials for the auto policy (which must see them
// as handshakes to start sending Retries), random connection IDs (the
// paper's flood) for everything that Retries before decrypting.
//
// In pool mode a DCID comes back every pool size or so, and the server
// hands a repeat of a DCID that became a connection to that connection
// instead of answering it with a Retry; so there the flood's loss counts
// frames the server's veth refused and datagrams its sockets dropped for a
// full buffer (unread), not missing Retries.
func (v Variant) FloodMode() string {
	if v == HostAuto {
		return "pool"
	}
	return "random-cids"
}

// QuicGoRoleEnv is set to 1 in the environment of the QuicGoServer
// program, so that a test binary standing in for it knows its role.
const QuicGoRoleEnv = "TURBORETRY_EVAL_QUICGO_SERVER"

// Config is one evaluation run.
type Config struct {
	// Out is the directory the CSV files and plots are written to.
	Out string
	// Turboretry runs turboretry subcommands (serve, agent): the program
	// and any leading arguments; the subcommand and its flags follow.
	Turboretry []string
	// QuicGoServer runs variant (a): a program started in the server
	// namespace as QuicGoServer... --addr A --cert F --key F --root DIR
	// (a test-only program, `make eval` builds it); empty skips (a).
	QuicGoServer []string
	// ChildEnv is added to every child's environment.
	ChildEnv []string
	// Variants are the variants of figures 9, 10 and 12 (nil: AllVariants
	// and, with TwoQueues, the two-queue ones).
	Variants []Variant
	// TwoQueues adds (c) and (d) with two receive queues to figure 9. With
	// two queues the generator runs a thread on each of the generator CPUs
	// (a veth picks the receive queue by the sending CPU).
	TwoQueues bool
	// Runs is how many times each maximum-rate search runs; figure 9 shows
	// the medians.
	Runs int
	// Step is how long one attack rate is held.
	Step time.Duration
	// Ladder is the attack rates (packets per second) of figures 10 and 12,
	// ascending; each variant climbs it until a step fails, then Bisect
	// steps refine its maximum for figure 9.
	Ladder []float64
	Bisect int
	// BenignRate is new benign connections (one request each) per second
	// during every step; BenignDeadline bounds each request.
	BenignRate     float64
	BenignDeadline time.Duration
	// MaxLoss is the share of flood packets a step may leave unanswered
	// (no Retry seen) and still count as sustained.
	MaxLoss float64
	// TransferSizes, TransferRates, TransferRequests: figure 11, that many
	// requests per file size at each attack rate, with and without the
	// agent ((b) and (c)).
	TransferSizes    []int
	TransferRates    []float64
	TransferRequests int
	// FailOpenRate, FailOpenFor, FailOpenKillAt: figure 13, requests per
	// second for that long against (d), the agent SIGKILLed at KillAt.
	FailOpenRate   float64
	FailOpenFor    time.Duration
	FailOpenKillAt time.Duration
	// GeneratorCPUs and ClientCPUs are where the generator threads and the
	// benign client (this process) run; ServerCPUs the server process and
	// its veth's NAPI thread; AgentCPUs (d)'s agent process and its ports'
	// NAPI threads.
	GeneratorCPUs, ClientCPUs, ServerCPUs, AgentCPUs []int
	// GoMaxProcs is the GOMAXPROCS of the Go servers and the agent (0:
	// the runtime's default, one per CPU they may use). On one CPU the
	// default is one P, which serializes the integrated agent's loop with
	// the HTTP/3 goroutines at Go's 10 ms preemption: a transfer beside a
	// flood then takes several times longer (docs/evaluation.md). Two Ps
	// let the kernel interleave them; every variant gets the same.
	GoMaxProcs int
	// Nice is the nice value of every process and thread of the experiment
	// (this one, the servers, the agent, the NAPI threads), so that other
	// work on a shared machine disturbs it less; all of them get the same,
	// so among themselves they share CPUs as at nice 0.
	Nice int
	// Skip names figures not to run ("9", "10", "11", "12", "13"; 10 and
	// 12 come from 9's steps).
	Skip []string
	// Log receives progress lines (nil: discarded).
	Log io.Writer `json:"-"`
	// Command is the command line recorded in the output.
	Command string
}

// Quick is a configuration that finishes in a few minutes: one run, short
// steps, a coarse ladder, few requests.
func Quick() Config {
	return Config{
		Runs:             1,
		Step:             time.Second,
		Ladder:           []float64{0, 10e3, 40e3, 160e3, 640e3, 2.56e6},
		Bisect:           1,
		BenignRate:       20,
		BenignDeadline:   3 * time.Second,
		MaxLoss:          0.01,
		TransferSizes:    []int{1 << 10, 512 << 10, 1 << 20, 10 << 20},
		TransferRates:    []float64{0, 50e3},
		TransferRequests: 2,
		FailOpenRate:     10,
		FailOpenFor:      6 * time.Second,
		FailOpenKillAt:   3 * time.Second,
		GeneratorCPUs:    []int{0},
		ClientCPUs:       []int{0},
		ServerCPUs:       []int{1},
		AgentCPUs:        []int{1},
		Nice:             -10,
		GoMaxProcs:       2,
	}
}

// Full is the documented evaluation: three runs of every search, 5-second
// steps doubling from 25 kpps, four bisection steps, the paper's fail-open
// timeline (10 requests per second for 40 s, the agent killed at 20 s).
func Full() Config {
	c := Quick()
	c.Runs = 3
	c.Step = 5 * time.Second
	c.Ladder = []float64{0, 25e3, 50e3, 100e3, 200e3, 400e3, 800e3, 1.6e6, 3.2e6, 6.4e6}
	c.Bisect = 4
	c.BenignRate = 50
	c.TransferRates = []float64{0, 50e3, 100e3}
	c.TransferRequests = 10
	c.FailOpenFor = 40 * time.Second
	c.FailOpenKillAt = 20 * time.Second
	c.TwoQueues = true
	return c
}

// check validates c and fills in the variant list.
func (c *Config) check() error {
	switch {
	case c.Out == "":
		return errors.New("eval: no output directory")
	case len(c.Turboretry) == 0:
		return errors.New("eval: no turboretry command for the server children")
	case c.Runs < 1 || c.Step <= 0 || c.Bisect < 0:
		return fmt.Errorf("eval: runs %d, step %v, bisect %d", c.Runs, c.Step, c.Bisect)
	case len(c.Ladder) == 0:
		return errors.New("eval: empty attack-rate ladder")
	case c.BenignRate <= 0 || c.BenignDeadline <= 0:
		return errors.New("eval: benign rate and deadline must be positive")
	case c.MaxLoss < 0 || c.MaxLoss >= 1:
		return fmt.Errorf("eval: max loss %v out of [0, 1)", c.MaxLoss)
	case len(c.GeneratorCPUs) == 0 || len(c.ClientCPUs) == 0 || len(c.ServerCPUs) == 0 || len(c.AgentCPUs) == 0:
		return errors.New("eval: every CPU set must name at least one CPU")
	case c.GoMaxProcs < 0:
		return fmt.Errorf("eval: GOMAXPROCS %d", c.GoMaxProcs)
	case c.Nice < -20 || c.Nice > 19:
		return fmt.Errorf("eval: nice %d out of -20..19", c.Nice)
	}
	for i, r := range c.Ladder {
		if r < 0 || (i > 0 && r <= c.Ladder[i-1]) {
			return fmt.Errorf("eval: the ladder must ascend from 0 or more: %v", c.Ladder)
		}
	}
	if c.Variants == nil {
		c.Variants = append([]Variant(nil), AllVariants...)
		if c.TwoQueues {
			c.Variants = append(c.Variants, XDP2Q, Split2Q)
		}
	}
	if len(c.QuicGoServer) == 0 {
		var vs []Variant
		for _, v := range c.Variants {
			if v != QuicGo {
				vs = append(vs, v)
			}
		}
		c.Variants = vs
	}
	return nil
}

// skip reports whether figure fig is not to run.
func (c *Config) skip(fig string) bool {
	for _, s := range c.Skip {
		if s == fig {
			return true
		}
	}
	return false
}
