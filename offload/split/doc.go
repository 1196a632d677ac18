// Package split runs the Retry agent as a process of its own between a wire
// port and a host port: the "split (DPU)" deployment of docs/design.md, which on
// a BlueField-3 runs on the Arm cores between the uplink p0 and the host
// representor pf0hpf, and which docs/split.md emulates with network
// namespaces and a Linux bridge.
//
// An Agent is three parts:
//
//   - the datapath of package offload/datapath on the wire port: the XDP
//     fast path (unchanged) redirects client Initials to AF_XDP sockets,
//     the agent answers token-less ones with a Retry out of the wire port,
//     and packets to admitted connection IDs pass on (into the bridge, so
//     to the host);
//   - the host port: a validated Initial (valid retry or NEW_TOKEN token)
//     leaves as the whole, unchanged Ethernet frame through an AF_XDP socket
//     on queue 0 of the host port, shared by the datapath's queues under a
//     lock;
//   - the control listener of package offload/announce: the host's QUIC
//     stack announces every connection ID it routes (its NEW_CONNECTION_ID
//     IDs travel encrypted, so the agent cannot learn them from the wire),
//     and each authentic announcement is admitted to the fast-path cache.
//
// # Fail-open
//
// The XDP program is attached through an unpinned BPF link: when the agent
// process ends, however it ends (SIGKILL included), the kernel removes the
// program and the wire port passes everything to the host, whose own
// validator takes over. The heartbeat covers an agent that hangs.
//
// # T_W and the host's idle timeout
//
// A connection ID not refreshed for one aging window T_W (RotateEvery)
// may be forgotten. The agent cannot see the host's idle timeout, so the
// operator states it (Config.IdleTimeout) and a window below it is refused.
//
// The agent needs what the datapath needs (Linux 5.12 or later, root or
// CAP_BPF+CAP_PERFMON+CAP_NET_ADMIN+CAP_NET_RAW);
// elsewhere Start fails with ErrUnsupported.
package split
