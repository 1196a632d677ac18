// Package doctor checks a host against the Linux UDP tuning that a QUIC
// server at high rates needs (the checklist of the second seed,
// linux-udp-offloads-http3): UDP GSO and GRO in the kernel, socket buffer
// limits against what the server asks for, the NIC's UDP offloads, native
// XDP, the privilege the sk_reuseport steering program needs, and NIC
// queues against workers. Every Result is OK, or says what to run to fix
// it. `turboretry doctor` prints them; `turboretry serve` logs Summary.
//
// The checks read the host through System, so tests give them a fake
// procfs and ethtool answer.
package doctor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/turboretry/turboretry/internal/udpio"
)

// Status is a check's outcome.
type Status uint8

const (
	// OK: nothing to do.
	OK Status = iota
	// Fix: worth changing; Result.Fix says how.
	Fix
	// Info: not applicable here, unknown, or advice for another role
	// (forwarding hosts); Result.Fix may still hold a command.
	Info
)

var statusNames = [...]string{OK: "OK", Fix: "FIX", Info: "INFO"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", s)
}

// Result is one check.
type Result struct {
	Check  string // short name: udp-gso, rmem_max, tx-udp-segmentation, ...
	Status Status
	Detail string // what was found
	Fix    string // the command (or change) that fixes it; empty when OK
}

// String renders one line: status, check, detail, and the fix.
func (r Result) String() string {
	s := fmt.Sprintf("%-4s %-22s %s", r.Status, r.Check, r.Detail)
	if r.Fix != "" {
		s += " -> " + r.Fix
	}
	return s
}

// Feature is one NIC offload feature as `ethtool -k` shows it.
type Feature struct {
	Active bool
	Fixed  bool // the driver does not let it change
}

// Channels are a NIC's receive queue counts (`ethtool -l`).
type Channels struct {
	RX, MaxRX, Combined, MaxCombined int
}

// XDP driver abilities (the kernel's netdev xdp-features).
type XDP struct {
	Native, Redirect, ZeroCopy bool
}

// System is what the checks read. Host returns the real one.
type System interface {
	// ReadFile reads a procfs file, for example
	// /proc/sys/net/core/rmem_max.
	ReadFile(name string) ([]byte, error)
	// UDPOffload reports whether a fresh UDP socket takes UDP_SEGMENT
	// (GSO) and UDP_GRO.
	UDPOffload() (gso, gro bool, err error)
	// Features returns the offload features of iface by ethtool name.
	Features(iface string) (map[string]Feature, error)
	// Channels returns the queue counts of iface.
	Channels(iface string) (Channels, error)
	// XDPFeatures returns what XDP the driver of iface supports.
	XDPFeatures(iface string) (XDP, error)
	// Driver returns the driver name of iface.
	Driver(iface string) (string, error)
	// ReuseportBPF loads and releases the sk_reuseport program: nil when
	// this process may steer sockets.
	ReuseportBPF() error
	// NumCPU returns the CPUs the server can use.
	NumCPU() int
}

// ErrPermission is what a System's ReuseportBPF wraps when privilege is
// missing.
var ErrPermission = errors.New("doctor: permission denied")

// Options say what the server will run.
type Options struct {
	// Iface is the interface clients arrive on; empty skips the NIC
	// checks.
	Iface string
	// Workers is the number of sockets (serve --workers); 0 means the
	// CPUs.
	Workers int
	// RecvBuffer and SendBuffer are the socket buffers the server asks
	// for; 0 means what it asks by default (internal/udpio).
	RecvBuffer, SendBuffer int
}

// Run runs every check that applies.
func Run(sys System, o Options) []Result {
	if o.Workers <= 0 {
		o.Workers = sys.NumCPU()
	}
	if o.RecvBuffer <= 0 {
		o.RecvBuffer = udpio.DefaultRecvBuffer
	}
	if o.SendBuffer <= 0 {
		o.SendBuffer = udpio.DefaultSendBuffer
	}
	var rs []Result
	rs = append(rs, udpOffload(sys)...)
	rs = append(rs, bufferLimit(sys, "rmem_max", o.RecvBuffer), bufferLimit(sys, "wmem_max", o.SendBuffer))
	rs = append(rs, reuseportBPF(sys), workersVsCPUs(sys, o.Workers))
	if o.Iface != "" {
		rs = append(rs, nicFeatures(sys, o.Iface)...)
		rs = append(rs, xdpNative(sys, o.Iface), queues(sys, o.Iface, o.Workers))
	}
	return rs
}

// Summary is the one line serve logs: counts and the checks to fix.
func Summary(rs []Result) string {
	var ok, info int
	var fix []string
	for _, r := range rs {
		switch r.Status {
		case OK:
			ok++
		case Fix:
			fix = append(fix, r.Check)
		default:
			info++
		}
	}
	s := fmt.Sprintf("%d ok, %d to fix, %d info", ok, len(fix), info)
	if len(fix) > 0 {
		s += " (" + strings.Join(fix, ", ") + "): run turboretry doctor for the fixes"
	}
	return s
}

func udpOffload(sys System) []Result {
	gso, gro, err := sys.UDPOffload()
	if err != nil {
		return []Result{{Check: "udp-gso/gro", Status: Info, Detail: "could not probe a UDP socket: " + err.Error()}}
	}
	r := []Result{
		{Check: "udp-gso", Status: OK, Detail: "UDP_SEGMENT available: up to 64 KiB of datagrams per send call"},
		{Check: "udp-gro", Status: OK, Detail: "UDP_GRO available: coalesced receives"},
	}
	if !gso {
		r[0] = Result{Check: "udp-gso", Status: Fix, Detail: "the kernel refuses UDP_SEGMENT: one datagram per message on send",
			Fix: "run Linux 4.18 or later (UDP GSO); 6.x recommended"}
	}
	if !gro {
		r[1] = Result{Check: "udp-gro", Status: Fix, Detail: "the kernel refuses UDP_GRO: one datagram per message on receive",
			Fix: "run Linux 5.0 or later (UDP GRO); 6.x recommended"}
	}
	return r
}

func bufferLimit(sys System, name string, want int) Result {
	path := "/proc/sys/net/core/" + name
	b, err := sys.ReadFile(path)
	if err != nil {
		return Result{Check: name, Status: Info, Detail: "cannot read " + path + ": " + err.Error()}
	}
	have, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return Result{Check: name, Status: Info, Detail: fmt.Sprintf("%s holds %q", path, strings.TrimSpace(string(b)))}
	}
	if have >= want {
		return Result{Check: name, Status: OK, Detail: fmt.Sprintf("net.core.%s = %d, at least the %d bytes the server asks for", name, have, want)}
	}
	return Result{Check: name, Status: Fix,
		Detail: fmt.Sprintf("net.core.%s = %d, below the %d bytes the server asks for (without root the kernel caps the socket buffer there; bursts are dropped)", name, have, want),
		Fix:    fmt.Sprintf("sysctl -w net.core.%s=%d (persist it in /etc/sysctl.d/99-quic.conf)", name, want)}
}

func reuseportBPF(sys System) Result {
	err := sys.ReuseportBPF()
	switch {
	case err == nil:
		return Result{Check: "reuseport-bpf", Status: OK, Detail: "the sk_reuseport steering program loads: workers keep migrating connections"}
	case errors.Is(err, ErrPermission):
		return Result{Check: "reuseport-bpf", Status: Fix,
			Detail: "loading the sk_reuseport program is refused (" + err.Error() + "): serve falls back to one socket",
			Fix:    "run serve as root, or: setcap cap_bpf,cap_perfmon,cap_net_admin+ep $(command -v turboretry)"}
	}
	return Result{Check: "reuseport-bpf", Status: Info, Detail: "no sk_reuseport steering here: " + err.Error()}
}

func workersVsCPUs(sys System, workers int) Result {
	n := sys.NumCPU()
	if workers <= n {
		return Result{Check: "workers", Status: OK, Detail: fmt.Sprintf("%d workers on %d CPUs", workers, n)}
	}
	return Result{Check: "workers", Status: Fix, Detail: fmt.Sprintf("%d workers but %d CPUs: workers wait for each other", workers, n),
		Fix: fmt.Sprintf("serve --workers %d", n)}
}

// nicChecks are the ethtool features checked, with what each does and
// whether it matters for a host that terminates QUIC or only for one that
// forwards it.
var nicChecks = []struct {
	name, what string
	forward    bool
}{
	{"tx-udp-segmentation", "UDP segmentation in the NIC (GSO sends leave as one superpacket)", false},
	{"tx-generic-segmentation", "generic segmentation offload (gso)", false},
	{"rx-gro", "generic receive offload (gro)", false},
	{"rx-gro-list", "fraglist GRO of forwarded UDP", true},
	{"rx-udp-gro-forwarding", "UDP GRO of forwarded traffic", true},
}

func nicFeatures(sys System, iface string) []Result {
	feats, err := sys.Features(iface)
	if err != nil {
		return []Result{{Check: "nic-features", Status: Info, Detail: fmt.Sprintf("cannot read the offload features of %s: %v", iface, err)}}
	}
	var rs []Result
	for _, c := range nicChecks {
		f, ok := feats[c.name]
		fix := fmt.Sprintf("ethtool -K %s %s on", iface, c.name)
		switch {
		case !ok:
			rs = append(rs, Result{Check: c.name, Status: Info, Detail: "not known to this kernel"})
		case f.Active:
			rs = append(rs, Result{Check: c.name, Status: OK, Detail: c.what + ": on"})
		case f.Fixed:
			rs = append(rs, Result{Check: c.name, Status: Info, Detail: fmt.Sprintf("%s: off, and the driver of %s cannot turn it on", c.what, iface)})
		case c.forward:
			rs = append(rs, Result{Check: c.name, Status: Info,
				Detail: c.what + ": off; it matters where this host forwards QUIC (a router, the split mode's DPU bridge), not for the server's own sockets",
				Fix:    fix})
		default:
			rs = append(rs, Result{Check: c.name, Status: Fix, Detail: c.what + ": off", Fix: fix})
		}
	}
	return rs
}

func xdpNative(sys System, iface string) Result {
	drv, _ := sys.Driver(iface)
	if drv == "" {
		drv = "unknown"
	}
	x, err := sys.XDPFeatures(iface)
	if err != nil {
		return Result{Check: "xdp-native", Status: Info, Detail: fmt.Sprintf("cannot query the XDP features of %s (driver %s): %v", iface, drv, err)}
	}
	if !x.Native || !x.Redirect {
		return Result{Check: "xdp-native", Status: Fix,
			Detail: fmt.Sprintf("driver %s of %s has no native XDP with redirect: --offload xdp attaches in generic mode, after the kernel built an skb for every packet", drv, iface),
			Fix:    "use a NIC whose driver runs XDP natively (mlx5, ice, i40e, ixgbe, bnxt, virtio_net, veth) for --offload xdp"}
	}
	zc := "copy-mode AF_XDP"
	if x.ZeroCopy {
		zc = "zero-copy AF_XDP"
	}
	return Result{Check: "xdp-native", Status: OK, Detail: fmt.Sprintf("driver %s of %s runs XDP natively with redirect, %s", drv, iface, zc)}
}

func queues(sys System, iface string, workers int) Result {
	ch, err := sys.Channels(iface)
	if err != nil {
		return Result{Check: "nic-queues", Status: Info, Detail: fmt.Sprintf("cannot read the queues of %s: %v", iface, err)}
	}
	n := ch.RX + ch.Combined
	switch {
	case n == workers:
		return Result{Check: "nic-queues", Status: OK, Detail: fmt.Sprintf("%s has %d receive queues for %d workers", iface, n, workers)}
	case n > workers:
		return Result{Check: "nic-queues", Status: Info,
			Detail: fmt.Sprintf("%s has %d receive queues for %d workers: the XDP agent runs one worker per queue, the server's sockets fewer", iface, n, workers),
			Fix:    fmt.Sprintf("serve --workers %d", min(n, sys.NumCPU()))}
	}
	detail := fmt.Sprintf("%s has %d receive queue(s) for %d workers: packets of the extra workers share queues and their CPUs", iface, n, workers)
	switch {
	case ch.MaxCombined >= workers:
		return Result{Check: "nic-queues", Status: Fix, Detail: detail, Fix: fmt.Sprintf("ethtool -L %s combined %d", iface, workers)}
	case ch.MaxRX >= workers:
		return Result{Check: "nic-queues", Status: Fix, Detail: detail, Fix: fmt.Sprintf("ethtool -L %s rx %d", iface, workers)}
	}
	most := max(ch.MaxCombined, ch.MaxRX, n)
	return Result{Check: "nic-queues", Status: Fix, Detail: detail + fmt.Sprintf(" (at most %d)", most), Fix: fmt.Sprintf("serve --workers %d", most)}
}
