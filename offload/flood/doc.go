// Package flood generates a QUIC Initial flood like the one in the
// TurboRetry paper's evaluation: valid client Initial packets (a real TLS
// ClientHello from crypto/tls, protected with the Initial keys derived from
// the packet's own Destination Connection ID, padded to a 1200-byte UDP
// payload), sent either as plain UDP datagrams to a target (sendmmsg) or as
// 1242-byte Ethernet frames with spoofed IPv4 sources from 198.18.0.0/15
// (AF_PACKET, sendmmsg), at a target rate or as fast as possible.
//
// # Safety
//
// The project's test network rules (docs/design.md) allow flood traffic only to
// loopback or into network namespaces that the tool or the test created,
// bounded in count and time, with spoofed sources from 198.18.0.0/15. The
// package enforces them where sockets are born: NewUDPSender refuses a
// non-loopback target unless the calling thread is in a network namespace
// other than the initial one, NewPacketSender always requires such a
// namespace, spoof prefixes outside 198.18.0.0/15 are rejected, and Run
// refuses a zero count or duration.
//
// # Packet pool versus re-protection
//
// A server must derive Initial keys from the DCID in the header and decrypt
// the payload before it can reject a packet, so every generated Initial
// stays decryptable. The whole QUIC header is associated data of the AEAD,
// so no header field (DCID, SCID, packet number) can be patched after
// protection; only the IP and UDP fields around the datagram (source
// address and port) are free. Two modes follow:
//
//   - Pool (default): N Initials are built up front, each with its own
//     random DCID and SCID and its own ClientHello, and cycled. Per packet
//     only the spoofed source address and port change, so generation is a
//     copy; the DCID repeats every N packets.
//   - Re-protect: every packet gets a fresh DCID and SCID, which means
//     deriving Initial keys (HKDF and AES key schedules) and encrypting
//     1200 bytes per packet: about 3.3 µs and 5 allocations per packet
//     (AES and GCM state; go test -run='^$' -bench=GenerateReprotect
//     -benchmem ./offload/flood/) against about 2 ns for a pool entry, but
//     no DCID ever repeats. The ClientHello is reused, so
//     its initial_source_connection_id transport parameter no longer
//     matches the header's SCID; a server notices that only after
//     decrypting and processing the ClientHello, which is the cost the
//     flood imposes anyway.
//
// Raw frames go through an AF_PACKET SOCK_RAW socket bound to one
// interface, which works on veth pairs and carries the exact bytes built
// by package offload/frame's builder (Ethernet, IPv4 and UDP headers
// with correct checksums). Package offload/flood/live sends the same flood
// about ten times cheaper per frame, built in the kernel by an XDP program
// run with BPF_PROG_RUN live frames.
package flood
