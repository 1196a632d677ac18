// Package udpio is the batched UDP I/O layer under the QUIC transport.
//
// On Linux a [Reader] receives many datagrams per system call with recvmmsg and a [Writer]
// sends many with sendmmsg. Both use the UDP offloads when [Setup] found them: UDP GSO on
// send (one buffer of equal-size segments to one destination, split by the kernel or the
// NIC) and UDP GRO on receive (the kernel hands over several datagrams of one flow as one
// coalesced buffer plus a segment size, see [SplitSegments]). Received messages carry the
// local destination address (IP_PKTINFO / IPV6_PKTINFO) so that a server bound to a wildcard
// address can answer from the address the client used, and the ECN bits.
//
// On other systems the same API reads and writes one datagram per call through the
// standard library, so the transport builds everywhere and is fast on Linux.
//
// Concurrency: a Reader and a Writer each belong to one goroutine at a time; their
// methods must not be called concurrently. One Reader and any number of Writers may be
// used on the same socket at the same time from different goroutines. Waiting for the
// socket is left to the Go netpoller (syscall.RawConn), so deadlines set on the
// *net.UDPConn apply and Close unblocks a pending call with net.ErrClosed.
//
// Memory: NewReader and NewWriter allocate their system call arrays once; ReadBatch and
// WriteBatch do not allocate in steady state. The caller owns every Message.Buf; the
// package only points the kernel at it for the duration of one system call and drops the
// reference before returning.
package udpio
