// Package live is a QUIC Initial flood generator that outruns the
// defences it tests: an XDP program (bpf/live.bpf.c) run by BPF_PROG_RUN
// with BPF_F_TEST_XDP_LIVE_FRAMES (Linux >= 5.18), which builds every
// frame in the kernel from a template and redirects it into a veth. On the
// 2-vCPU development machine it sends 6 to 10 million 1242-byte frames per
// second from one CPU (70 to 100 ns of CPU per frame, BenchmarkLive),
// against 0.2 to 0.9 million for offload/flood's AF_PACKET sender; see
// docs/evaluation.md for the comparison with AF_XDP TX and PACKET_TX_RING.
//
// Per frame the program writes the whole Ethernet, IPv4 and UDP header
// from its configuration, a random source address inside the spoof prefix
// and a random source port, and in [RandomCIDs] mode random 8-byte DCID and
// SCID (the Initial is then not decryptable, as in the paper's flood) or
// in [Pool] mode one of a flood.Generator's complete Initials; both
// checksums come from sums the loader precomputes, so nothing is read back
// from the frame (the kernel's page pool does not reset frames between
// runs).
//
// # Safety
//
// The package keeps offload/flood's rules: New and Run refuse to work
// outside a private network namespace, and Run only on a thread in the
// namespace New saw (the redirect target is an interface index there);
// spoof prefixes must lie in 198.18.0.0/15; every run is bounded by a
// packet count and a duration (flood.RunConfig), and an interrupted
// BPF_PROG_RUN call is resumed from the program's own frame counter, so a
// run never sends more than its count.
//
// # The lo attachment
//
// BPF_PROG_RUN in XDP mode adds the program to the kernel's XDP dispatcher
// before each call and removes it after, with RCU waits that cost about
// 25 ms per call. New therefore also attaches the program as generic XDP to
// the namespace's lo, which keeps it in the dispatcher; there the program
// passes every packet untouched (it acts only when the run's ingress
// interface, set through the BPF_PROG_RUN context, is the configured one).
// Traffic on that namespace's lo pays for a generic XDP program meanwhile.
//
// # The receiving veth
//
// A veth drops redirected frames unless its peer has an XDP program or
// GRO enabled. The peer's receive work (its XDP program, the skb, the
// protocol stack) runs in its NAPI context, by default on the sending CPU;
// threaded NAPI (/sys/class/net/IF/threaded) pinned elsewhere moves it to
// the receiver's CPU. [ReadXmitStats] reads how many frames the peer took
// and how many it refused (its ring was full).
package live
