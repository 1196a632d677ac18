package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/turboretry/turboretry/app/doctor"
)

func init() {
	register(&command{
		name:    "doctor",
		summary: "check this host's UDP offloads, buffers, XDP and reuseport steering",
		run:     runDoctor,
	})
}

const doctorSynopsis = "turboretry doctor [--iface IF] [--workers N] [--strict]\n\n" +
	"Checks this host against what a QUIC server at high rates needs (docs/reuseport.md,\n" +
	"\"turboretry doctor\"): UDP GSO and GRO in the kernel, net.core.rmem_max and wmem_max\n" +
	"against the socket buffers the server asks for, whether the sk_reuseport steering\n" +
	"program may be loaded, workers against CPUs, and with --iface the NIC's offload\n" +
	"features (tx-udp-segmentation, gso, gro, rx-gro-list, rx-udp-gro-forwarding), native\n" +
	"XDP and its receive queues against the workers. Each line is OK, INFO, or FIX with the\n" +
	"command that fixes it. The exit status is 0 unless --strict is given and something\n" +
	"needs a fix (then 1)."

func runDoctor(_ context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("doctor", doctorSynopsis, stderr)
	iface := flags.String("iface", "", "also check the network interface `IF` clients arrive on")
	workers := flags.Int("workers", 0, "the `N` workers serve will run (default: the number of CPUs)")
	strict := flags.Bool("strict", false, "exit 1 when a check needs a fix")
	pos, err := parseArgs(flags, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return usageError(flags, "unexpected argument %q", pos[0])
	}
	if *workers < 0 {
		return usageError(flags, "--workers %d: want 1 or more (0: the CPUs)", *workers)
	}
	if *iface != "" {
		if _, err := net.InterfaceByName(*iface); err != nil {
			fmt.Fprintf(stderr, "doctor: --iface %s: %v\n", *iface, err)
			return exitFail
		}
	}
	rs := doctor.Run(doctor.Host(), doctor.Options{Iface: *iface, Workers: *workers})
	fix := false
	for _, r := range rs {
		fmt.Fprintln(stdout, r)
		fix = fix || r.Status == doctor.Fix
	}
	fmt.Fprintln(stdout, "summary:", doctor.Summary(rs))
	if *strict && fix {
		return exitFail
	}
	return exitOK
}
