// Package datapath runs the Retry agent of package offload/agent behind the
// XDP fast path of package offload/xdp, with one AF_XDP socket (package
// offload/afxdp) per receive queue: the "integrated XDP" deployment of
// docs/design.md ("Address validation architecture"), in which
// `turboretry serve --offload xdp --iface IF` filters in the server process.
//
// Start loads the XDP program, opens and registers one socket per queue,
// starts one agent worker goroutine per socket, the heartbeat and the
// fast-path rotation, and attaches the program. For every frame the program
// redirects (QUIC Initials and long headers of other versions):
//
//   - SendReply (Retry, Version Negotiation): the reply frame is written over
//     the received frame in its own UMEM frame (MAC, IP and port swapped, new
//     lengths and checksums) and transmitted on the same queue;
//   - Forward (a validated Initial): Config.Deliver gets the UDP payload, which
//     is how the QUIC transport receives it without a trip through the kernel
//     (integrated mode); or Config.Forward gets the whole, unchanged Ethernet
//     frame, which the split mode (package offload/split) sends on out of
//     the host port;
//   - Drop: the frame goes back to the fill ring.
//
// Everything else on the server port (Handshake and short-header packets
// whose DCID the agent admitted to the shared cache) reaches the server's UDP
// socket through the kernel stack; the program drops the rest.
//
// # Fail-open
//
// The agent's heartbeat writes xdp.MonotonicNow into the program's heartbeat
// map. Pause (fault injection) or a socket failure stops it, and after
// Config.StaleAfter the program passes every packet to the kernel stack, where
// the host's own validator takes over. Close detaches the program, so nothing
// filters after the process stops either.
//
// # Steady state
//
// A worker owns its socket, its agent worker and its scratch buffers; a
// packet costs no allocation and no lock. Counters are published per batch.
//
// # Not done
//
// Frames are parsed as the afxdp package does (no VLAN tags, no IPv6
// extension headers; the XDP program passes those to the kernel anyway).
// The tests cover IPv4 over veth; IPv6 replies are covered by the frame
// builder's tests only. Worker goroutines are not pinned to CPUs.
//
// The datapath needs Linux with AF_XDP and BPF links (5.12 or later), root or
// CAP_BPF+CAP_PERFMON+CAP_NET_ADMIN+CAP_NET_RAW. Elsewhere the package holds only
// the portable reply-frame builder.
package datapath
