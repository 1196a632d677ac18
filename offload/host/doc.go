// Package host is the host side of the address-validation offload: it
// attaches a Retry agent's fast path to a quic.Transport, in one call,
// Attach, for either deployment mode of docs/design.md ("Address validation
// architecture"):
//
//   - ModeXDP, the integrated mode: the agent runs in this process on
//     AF_XDP sockets behind the XDP fast path (offload/datapath) on the
//     interface the Transport's socket receives on. Validated Initials go
//     straight into the Transport (InjectDatagram), and every connection ID
//     the Transport routes is admitted to the fast path.
//   - ModeSplit, the split (DPU) mode: the agent is another process in
//     front of this host (turboretry agent, offload/split); the host
//     announces every connection ID it routes to the agent's control
//     address (offload/announce), because the agent cannot read the
//     encrypted NEW_CONNECTION_ID frames.
//
// In both modes the Transport keeps its own address validation: it
// revalidates every token the agent let through, and its policy is the
// fail-open fallback when the agent stops.
//
// This is the only offload package that imports quic; the agent, the fast
// path and the datapath below it know nothing of the QUIC stack.
package host
