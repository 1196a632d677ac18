package eval

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/ethtool"
	"github.com/turboretry/turboretry/internal/netns"
	"github.com/turboretry/turboretry/offload/flood/live"
)

// The evaluation network, inside 198.18.0.0/15. The client namespace is
// also the attacker's: the benign client's sockets and the generator both
// use its veth end, so the server sees one interface, as with one NIC. The
// server routes the spoofed sources back to the client namespace, where an
// XDP program counts the replies (Retries) and drops them.
var (
	ipClient   = netip.MustParseAddr("198.18.0.1")
	ipServer   = netip.MustParseAddr("198.18.0.2")
	ipDPU      = netip.MustParseAddr("198.18.0.254")
	spoofNet   = netip.MustParsePrefix("198.18.128.0/17")
	macClient  = "02:00:5e:00:14:01"
	macServer  = "02:00:5e:00:14:02"
	serverPort = uint16(4433)
	metricsSrv = netip.AddrPortFrom(ipServer, 9464)
	agentCtl   = netip.AddrPortFrom(ipDPU, 4434)
	metricsDPU = netip.AddrPortFrom(ipDPU, 9465)
)

// network is one variant's namespaces and devices. Device names carry the
// run's tag, so the NAPI kthreads (named after their device) are found
// among other namespaces' devices.
type network struct {
	ns                   namespaces
	client, server, dpu  string // namespace names; dpu empty but for (d)
	cliDev, srvDev       string // the client's and the server's veth ends
	wireDev, hostDev     string // (d): the agent's wire and host ports
	sink                 *live.ReplySink
	cfg                  *Config
	clientCPU, serverCPU []int
	agentCPU             []int
}

// newNetwork creates the namespaces and veths for variant v (with queues
// receive queues on the server's, or in (d) the agent's, interface).
func newNetwork(cfg *Config, tag string, v Variant, queues int) (n *network, err error) {
	n = &network{cfg: cfg, client: "tre-" + tag + "-c", server: "tre-" + tag + "-s",
		cliDev: tag + "c", srvDev: tag + "s", clientCPU: cfg.ClientCPUs, serverCPU: cfg.ServerCPUs, agentCPU: cfg.AgentCPUs}
	defer func() {
		if err != nil {
			n.close()
			n = nil
		}
	}()
	for _, ns := range []string{n.client, n.server} {
		if err := n.ns.add(ns); err != nil {
			return n, err
		}
	}
	q := fmt.Sprint(max(queues, 1))
	c, s := n.client, n.server
	if v.Split() {
		n.dpu, n.wireDev, n.hostDev = "tre-"+tag+"-d", tag+"p", tag+"h"
		if err := n.ns.add(n.dpu); err != nil {
			return n, err
		}
		d := n.dpu
		for _, args := range [][]string{
			{"link", "add", n.cliDev, "netns", c, "address", macClient, "type", "veth", "peer", "name", n.wireDev, "netns", d, "numrxqueues", q, "numtxqueues", q},
			{"link", "add", n.hostDev, "netns", d, "type", "veth", "peer", "name", n.srvDev, "netns", s, "address", macServer},
			{"-n", d, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"},
			{"-n", d, "link", "set", n.wireDev, "master", "br0"},
			{"-n", d, "link", "set", n.hostDev, "master", "br0"},
			{"-n", d, "addr", "add", netip.PrefixFrom(ipDPU, 24).String(), "dev", "br0"},
		} {
			if err := netns.IP(args...); err != nil {
				return n, err
			}
		}
		for _, dev := range []string{n.wireDev, n.hostDev, "br0", "lo"} {
			if err := netns.IP("-n", d, "link", "set", dev, "up"); err != nil {
				return n, err
			}
		}
	} else {
		if err := netns.IP("link", "add", n.cliDev, "netns", c, "address", macClient, "type", "veth",
			"peer", "name", n.srvDev, "netns", s, "address", macServer, "numrxqueues", q, "numtxqueues", q); err != nil {
			return n, err
		}
	}
	for _, e := range []struct {
		ns, dev string
		addr    netip.Addr
	}{{c, n.cliDev, ipClient}, {s, n.srvDev, ipServer}} {
		if err := netns.Up(e.ns, e.dev, netip.PrefixFrom(e.addr, 24)); err != nil {
			return n, err
		}
	}
	if err := netns.Neigh(c, n.cliDev, ipServer, macServer); err != nil {
		return n, err
	}
	if err := netns.Neigh(s, n.srvDev, ipClient, macClient); err != nil {
		return n, err
	}
	// Replies to spoofed sources go back to the client namespace.
	if err := netns.IP("-n", s, "route", "add", spoofNet.String(), "via", ipClient.String()); err != nil {
		return n, err
	}
	if err := n.offloads(); err != nil {
		return n, err
	}
	for _, w := range [][2]string{{c, n.cliDev}, {s, n.srvDev}} {
		if err := netns.WaitUp(w[0], w[1], 10*time.Second); err != nil {
			return n, err
		}
	}
	if n.dpu != "" {
		for _, dev := range []string{n.wireDev, n.hostDev} {
			if err := netns.WaitUp(n.dpu, dev, 10*time.Second); err != nil {
				return n, err
			}
		}
	}
	// The reply sink puts the client's veth in NAPI mode; then every
	// receiving device gets threaded NAPI, pinned to the CPUs of the
	// machine it belongs to.
	if err := netns.In(c, func() error {
		var err error
		n.sink, err = live.AttachReplySink(n.cliDev, spoofNet, serverPort)
		return err
	}); err != nil {
		return n, err
	}
	return n, n.pinNAPI()
}

// offloads sets every veth up like a NIC: full checksums on transmit (a
// frame an XDP program passes on carries no checksum-offload state), no
// TSO (so that a veth hands the peer's frames to its NAPI instead of
// processing them on the sending CPU), and GRO on, which gives each veth
// the NAPI instance that threaded NAPI moves to a CPU of its own.
func (n *network) offloads() error {
	devs := [][2]string{{n.client, n.cliDev}, {n.server, n.srvDev}}
	if n.dpu != "" {
		devs = append(devs, [2]string{n.dpu, n.wireDev}, [2]string{n.dpu, n.hostDev})
	}
	for _, d := range devs {
		if err := netns.In(d[0], func() error {
			for _, f := range []struct {
				f  ethtool.Offload
				on bool
			}{{ethtool.TXChecksum, false}, {ethtool.TSO, false}, {ethtool.GSO, false}, {ethtool.GRO, true}} {
				if err := ethtool.SetOffload(d[1], f.f, f.on); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// pinNAPI switches the receiving devices to threaded NAPI (once) and pins
// every NAPI thread of each, at SCHED_FIFO priority 1, to its machine's
// CPUs: the client's veth to
// the client CPU, the server's to the server CPUs, (d)'s wire and host
// ports to the agent CPUs. Called again after a server attached its XDP
// program, in case the kernel recreated a NAPI instance.
func (n *network) pinNAPI() error {
	type devCPU struct {
		ns, dev string
		cpus    []int
	}
	devs := []devCPU{{n.client, n.cliDev, n.clientCPU}, {n.server, n.srvDev, n.serverCPU}}
	if n.dpu != "" {
		devs = append(devs, devCPU{n.dpu, n.wireDev, n.agentCPU}, devCPU{n.dpu, n.hostDev, n.agentCPU})
	}
	for _, d := range devs {
		pids, err := napiThreads(d.dev)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			if pids, err = setThreaded(d.ns, d.dev); err != nil {
				return err
			}
		}
		for _, p := range pids {
			if err := pinPID(p, d.cpus, n.cfg.Nice); err != nil {
				return fmt.Errorf("eval: pinning NAPI thread %d of %s: %w", p, d.dev, err)
			}
			// Receive work preempts tasks, as softirq does on a NIC's
			// interrupt: a veth's ring holds 256 frames, which a NAPI
			// thread waiting for its turn among tasks would let overflow
			// at rates its CPU sustains. Under a flood beyond that the
			// thread and the server share the CPU as softirq and tasks
			// do (and RT throttling keeps 5 % for tasks).
			if err := unix.SchedSetAttr(p, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
				return fmt.Errorf("eval: SCHED_FIFO for %s's NAPI thread: %w", d.dev, err)
			}
		}
	}
	return nil
}

// napiOf lists dev's NAPI threads.
func (n *network) napiOf(dev string) []int {
	p, _ := napiThreads(dev)
	slices.Sort(p)
	return p
}

// close deletes the namespaces (and their devices) and the sink.
func (n *network) close() error {
	if n.sink != nil {
		n.sink.Close()
		n.sink = nil
	}
	return n.ns.close()
}
