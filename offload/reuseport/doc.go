// Package reuseport spreads one QUIC server over several workers: N UDP
// sockets bound to the same address with SO_REUSEPORT, one per worker
// (each with its own receive loop, typically one quic.Transport), and an
// sk_reuseport eBPF program (bpf/steer.bpf.c, compiled with bpf2go into the
// committed steer_bpfel.o) that picks the socket for every datagram from
// its QUIC destination connection ID, so that a connection lives on one
// worker even when the client's address or port changes (migration, NAT
// rebinding). The worker index travels in the server's connection IDs
// (package quiclb); docs/reuseport.md has the whole design.
//
// The program sends
//
//   - a short header, or a long header with a DCID of the server's length,
//     that carries one of the server's IDs (first octet, and the MAC when
//     the IDs have one) to the worker index in it (Stats.Steered);
//   - any other long header, a client-chosen DCID (first Initials, their
//     retransmissions, 0-RTT), to SipHash(DCID) modulo the workers, so all
//     of a client's first packets land on one worker (Stats.Hashed);
//   - anything else to the kernel's default choice, a hash of the 4-tuple
//     (Stats.Undecodable, Truncated, NoSocket).
//
// Listen opens the group, loads the program, registers the sockets in its
// REUSEPORT_SOCKARRAY and attaches it with SO_ATTACH_REUSEPORT_EBPF. Where
// that is refused (no CAP_BPF, no Linux), Listen falls back as
// Config.Fallback says, to one socket or to plain SO_REUSEPORT (the 4-tuple
// hash, which does not keep a migrating connection on its worker), and
// Group.Mode and Group.Reason say so. host.ListenWorkers (package
// offload/host, which knows quic) makes one quic.Transport per socket with
// that worker's ID generator.
//
// Validated Initials that do not come through a socket (the integrated XDP
// mode injects them) are steered in Go by Group.WorkerFor, the same rules
// with the same hash key.
package reuseport
