//go:build eval

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"

	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/flood/live"
)

func init() {
	register(&command{
		name:    "flood",
		summary: "send a bounded QUIC Initial flood to loopback or inside a test namespace",
		run:     runFlood,
	})
}

const floodSynopsis = `turboretry flood --target IP:PORT --count N --duration D [--rate PPS]
         [--version 1|2] [--dcid-len N] [--scid-len N] [--pool N | --reprotect]
         [--iface IF --spoof[=PREFIX] [--dst-mac MAC] [--live]] [--batch N] [--server-name NAME]

Sends valid QUIC client Initials (a real ClientHello, 1200-byte UDP payloads),
bounded by --count and --duration (both required), and prints a JSON summary.
Without --spoof it sends UDP datagrams with sendmmsg. With --iface and --spoof it
writes 1242-byte Ethernet frames with random sources from 198.18.0.0/15 (or
PREFIX inside it) to IF through an AF_PACKET socket. With --live as well, an XDP
program builds the frames in the kernel (BPF_PROG_RUN live frames, Linux >= 5.18)
and redirects them into IF, about ten times faster: every frame gets random
8-byte DCID and SCID (not decryptable, the paper's flood), or with --pool N one
of N complete Initials at random. IF's veth peer needs an XDP program or GRO.

docs/design.md test network rules: the target must be loopback, or the command must run
inside a network namespace other than the initial one (ip netns exec NAME ...);
--spoof always needs such a namespace.`

// floodSpoof is --spoof: a boolean flag that also takes =PREFIX.
type floodSpoof struct {
	set    bool
	prefix netip.Prefix
}

func (s *floodSpoof) String() string {
	if s == nil || !s.set {
		return ""
	}
	return s.prefix.String()
}

func (s *floodSpoof) IsBoolFlag() bool { return true }

func (s *floodSpoof) Set(v string) error {
	switch v {
	case "true":
		s.set, s.prefix = true, flood.SpoofRange
		return nil
	case "false":
		s.set = false
		return nil
	}
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return fmt.Errorf("not a prefix: %q", v)
	}
	if err := flood.CheckSpoofPrefix(p); err != nil {
		return err
	}
	s.set, s.prefix = true, p
	return nil
}

// floodSummary is the JSON the command prints.
type floodSummary struct {
	Target    string  `json:"target"`
	Mode      string  `json:"mode"` // "udp", "spoof" or "live"
	LiveMode  string  `json:"live_mode,omitempty"`
	Iface     string  `json:"iface,omitempty"`
	Spoof     string  `json:"spoof,omitempty"`
	Version   string  `json:"version"`
	Pool      int     `json:"pool"`
	Reprotect bool    `json:"reprotect"`
	Count     uint64  `json:"count"`
	Duration  float64 `json:"duration_s"`
	Rate      float64 `json:"rate_pps"`
	flood.Stats
	ElapsedS float64 `json:"elapsed_s"`
	// With --live: the sending thread's CPU time, BPF_PROG_RUN calls, and
	// the frames IF's peer took and refused (its ring full).
	CPUS      float64 `json:"cpu_s,omitempty"`
	Calls     uint64  `json:"calls,omitempty"`
	Delivered *uint64 `json:"delivered,omitempty"`
	Refused   *uint64 `json:"refused,omitempty"`
}

func runFlood(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("flood", floodSynopsis, stderr)
	target := fs.String("target", "", "destination `IP:PORT` (required)")
	count := fs.Uint64("count", 0, "packets to send, `N` > 0 (required)")
	duration := fs.Duration("duration", 0, "longest run time, e.g. 10s (required)")
	rate := fs.Float64("rate", 0, "target rate in packets per second, `PPS` (0: as fast as possible)")
	version := fs.Int("version", 1, "QUIC version: 1 or 2")
	dcidLen := fs.Int("dcid-len", flood.DefaultDCIDLen, "Destination Connection ID length, 8-20")
	scidLen := fs.Int("scid-len", flood.DefaultSCIDLen, "Source Connection ID length, 1-20")
	pool := fs.Int("pool", flood.DefaultPoolSize, "number of pre-built Initials with distinct DCIDs to cycle")
	reprotect := fs.Bool("reprotect", false, "build every packet afresh (new DCID/SCID, new keys) instead of cycling a pool")
	iface := fs.String("iface", "", "with --spoof: interface `IF` to write raw frames to")
	var spoof floodSpoof
	fs.Var(&spoof, "spoof", "spoof sources from 198.18.0.0/15; --spoof=`PREFIX` narrows it (needs --iface)")
	dstMAC := fs.String("dst-mac", "", "with --spoof: destination `MAC` of the frames (default broadcast)")
	liveFlag := fs.Bool("live", false, "with --spoof: build the frames in an XDP program (BPF_PROG_RUN live frames)")
	batch := fs.Int("batch", flood.DefaultBatch, "packets per sendmmsg call (with --live: frames per kernel batch, 1-256)")
	serverName := fs.String("server-name", flood.DefaultServerName, "SNI in the ClientHellos")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return usageError(fs, "unexpected argument %q", pos[0])
	}
	set := setFlags(fs)
	if !set["target"] {
		return usageError(fs, "--target is required")
	}
	dst, err := netip.ParseAddrPort(*target)
	if err != nil || dst.Port() == 0 {
		return usageError(fs, "--target %q is not IP:PORT with a nonzero port", *target)
	}
	if !set["count"] || !set["duration"] || *count == 0 || *duration <= 0 {
		return usageError(fs, "refusing an unbounded run: give both --count N > 0 and --duration D > 0")
	}
	var v flood.Version
	switch *version {
	case 1:
		v = flood.Version1
	case 2:
		v = flood.Version2
	default:
		return usageError(fs, "--version must be 1 or 2, not %d", *version)
	}
	if *dcidLen < flood.MinDCIDLen || *dcidLen > flood.MaxCIDLen {
		return usageError(fs, "--dcid-len must be %d to %d", flood.MinDCIDLen, flood.MaxCIDLen)
	}
	if *scidLen < 1 || *scidLen > flood.MaxCIDLen {
		return usageError(fs, "--scid-len must be 1 to %d", flood.MaxCIDLen)
	}
	if set["pool"] && *reprotect {
		return usageError(fs, "--pool and --reprotect exclude each other")
	}
	if *pool < 1 || *pool > flood.MaxPoolSize {
		return usageError(fs, "--pool must be 1 to %d", flood.MaxPoolSize)
	}
	if *batch < 1 || *batch > 1024 {
		return usageError(fs, "--batch must be 1 to 1024")
	}
	if *liveFlag {
		switch {
		case !spoof.set:
			return usageError(fs, "--live needs --iface and --spoof")
		case *reprotect:
			return usageError(fs, "--live builds frames in the kernel: it cannot --reprotect")
		case *dcidLen != flood.DefaultDCIDLen || *scidLen != flood.DefaultSCIDLen:
			return usageError(fs, "--live sends 8-byte DCIDs and SCIDs only")
		case *batch > 256:
			return usageError(fs, "--batch must be 1 to 256 with --live")
		}
	}
	rc := flood.RunConfig{Count: *count, Duration: *duration, Rate: *rate, Batch: *batch}
	if err := rc.Check(); err != nil {
		return usageError(fs, "%s", strings.TrimPrefix(err.Error(), "flood: "))
	}
	if spoof.set != (*iface != "") {
		return usageError(fs, "--spoof and --iface go together")
	}
	if set["dst-mac"] && !spoof.set {
		return usageError(fs, "--dst-mac applies to --spoof only")
	}
	var mac net.HardwareAddr
	if *dstMAC != "" {
		if mac, err = net.ParseMAC(*dstMAC); err != nil || len(mac) != 6 {
			return usageError(fs, "--dst-mac %q is not an Ethernet address", *dstMAC)
		}
	}
	if spoof.set && !dst.Addr().Is4() {
		return usageError(fs, "--spoof needs an IPv4 --target")
	}

	poolSize := *pool
	if *liveFlag && !set["pool"] {
		poolSize = 1 // random-CID mode uses one Initial as its template
	}
	gen, err := flood.NewGenerator(flood.GeneratorConfig{
		Version: v, DCIDLen: *dcidLen, SCIDLen: *scidLen, PoolSize: poolSize,
		Reprotect: *reprotect, ServerName: *serverName,
	})
	if err != nil {
		return floodFail(stderr, err)
	}
	sum := floodSummary{
		Target: dst.String(), Mode: "udp", Version: v.String(), Pool: gen.PoolSize(),
		Reprotect: *reprotect, Count: *count, Duration: duration.Seconds(), Rate: *rate,
	}
	if *liveFlag {
		return runLiveFlood(ctx, stdout, stderr, sum, liveFlood{
			cfg: live.Config{Iface: *iface, Target: dst, Spoof: spoof.prefix, DstMAC: mac, Generator: gen, Batch: *batch},
			run: rc, pool: set["pool"],
		})
	}
	var sender flood.Sender
	var src flood.Source = gen
	if spoof.set {
		ps, err := flood.NewPacketSender(*iface, *batch)
		if err != nil {
			return floodFail(stderr, err)
		}
		sender = ps
		fsrc, err := flood.NewFrameSource(gen, flood.FrameConfig{
			Target: dst, Spoof: spoof.prefix, SrcMAC: ps.HardwareAddr(), DstMAC: mac,
		})
		if err != nil {
			ps.Close()
			return floodFail(stderr, err)
		}
		src = fsrc
		sum.Mode, sum.Iface, sum.Spoof = "spoof", *iface, spoof.prefix.String()
	} else {
		us, err := flood.NewUDPSender(dst, *batch)
		if err != nil {
			return floodFail(stderr, err)
		}
		sender = us
	}
	defer sender.Close()
	st, err := flood.Run(ctx, rc, src, sender)
	sum.Stats = st
	sum.ElapsedS = st.Elapsed.Seconds()
	return printFloodSummary(stdout, stderr, &sum, err)
}

// printFloodSummary writes sum as JSON, then reports err.
func printFloodSummary(stdout, stderr io.Writer, sum *floodSummary, err error) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if jerr := enc.Encode(sum); jerr != nil {
		fmt.Fprintln(stderr, "flood:", jerr)
		return exitFail
	}
	if err != nil {
		return floodFail(stderr, err)
	}
	return exitOK
}

// liveFlood is a --live run: pool is whether --pool was given (Pool mode).
type liveFlood struct {
	cfg  live.Config
	run  flood.RunConfig
	pool bool
}

// runLiveFlood sends with offload/flood/live from the calling thread's
// namespace (the generator is made and run on the same locked thread).
func runLiveFlood(ctx context.Context, stdout, stderr io.Writer, sum floodSummary, l liveFlood) int {
	if l.pool {
		l.cfg.Mode = live.Pool
	} else {
		sum.Pool = 0
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g, err := live.New(l.cfg)
	if err != nil {
		return floodFail(stderr, err)
	}
	defer g.Close()
	sum.Mode, sum.LiveMode, sum.Iface, sum.Spoof = "live", l.cfg.Mode.String(), l.cfg.Iface, l.cfg.Spoof.String()
	st, err := g.Run(ctx, l.run)
	sum.Stats = st.Stats
	sum.ElapsedS = st.Elapsed.Seconds()
	sum.CPUS, sum.Calls = st.CPUS, st.Calls
	if st.HaveXmit {
		sum.Delivered, sum.Refused = &st.Delivered, &st.Refused
	}
	return printFloodSummary(stdout, stderr, &sum, err)
}

// floodFail prints err (the flood package's errors, safety refusals
// included, already start with "flood:") and returns exitFail.
func floodFail(stderr io.Writer, err error) int {
	msg := err.Error()
	if !strings.HasPrefix(msg, "flood:") {
		msg = "flood: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return exitFail
}
