// Package afxdp implements AF_XDP sockets on golang.org/x/sys/unix: the
// datapath that carries QUIC Initials from the XDP fast path (package
// offload/xdp) to the Retry agent and its Retries back out (docs/design.md,
// "integrated XDP" mode).
//
// A Socket owns one UMEM (an mmap'd array of equally sized frames), its fill
// and completion rings, and an RX and a TX ring, and is bound to one receive
// queue of one interface: one socket per queue. The kernel fills frames that
// the fill ring hands it and reports them on the RX ring; frames written by the
// application go out through the TX ring and come back on the completion ring.
// The ring indices are shared with the kernel and read and written with
// atomic loads and stores, which order the descriptor accesses around them.
//
// Frames never move: Receive returns descriptors (Desc) whose bytes Frame
// exposes in place, Release gives them back to the kernel, Transmit queues
// descriptors for sending (a received frame rewritten in place, or one from
// AllocFrame). A fixed free-frame stack replaces per-packet allocation, so the
// steady state allocates nothing.
//
// Binding tries zero-copy first and lets the kernel fall back to copy mode
// (ModeAuto; Socket.ZeroCopy reports the outcome); XDP_USE_NEED_WAKEUP is
// set, so the kernel is kicked (sendto for TX, recvfrom for the fill ring)
// only when it asks. Wait blocks in poll(2) until the socket is ready, a
// timeout passes or a context ends.
//
// The package does not load XDP programs. A caller puts the socket into an
// XSKMAP (Socket.Register takes any *ebpf.Map of that type, such as
// xdp.Program.XSKMap) or inserts Socket.FD itself.
//
// The Ethernet/IP/UDP framing of what goes through the sockets is package
// offload/frame; the sockets are Linux only.
//
// Errors: ErrPermission (no CAP_NET_RAW, or not root), ErrNoInterface,
// ErrQueueRange, ErrNotSupported (kernel without AF_XDP, or zero-copy
// requested where the driver lacks it) and ErrBusy (queue already has a
// socket) wrap the errno; test them with errors.Is.
package afxdp
