// Package xdp loads the XDP fast path of docs/design.md ("Address validation
// architecture", "Fast-path connection cache") and shares its connection
// cache with the Go agent.
//
// The program (bpf/fastpath.bpf.c, compiled with bpf2go into the committed
// fastpath_bpfel.o, so building needs no clang) parses Ethernet, IPv4 (with
// options) or IPv6, and UDP to the configured server port, then:
//
//   - a QUIC v1 Initial of at least 1200 bytes, and a long header of any
//     other non-zero version, is redirected to the AF_XDP socket of its
//     receive queue (map tr_xsks) for the agent; when the queue has no
//     socket the packet passes to the kernel stack instead (fail-open);
//   - Handshake, 0-RTT and short-header packets pass when their DCID is one
//     of the server's authenticated IDs (Config.IDs, package quiclb) whose
//     MAC verifies (dpa-firmware/include/tr_cid.h; no cache state), or when
//     it hits the cache of dpa-firmware/include/tr_fastpath.h (a PASSIVE hit
//     is re-inserted into ACTIVE), and are dropped otherwise;
//   - everything else on the port (short Initials, Retry and Version
//     Negotiation sent to a server, packets too short to hold a DCID, a
//     long-header DCID of another length than the cache's) is dropped;
//   - everything else passes untouched: other ports and protocols, ARP,
//     truncated frames, IPv4 fragments, IPv6 packets whose UDP header sits
//     behind extension headers (not parsed, so never misparsed), VLAN tags.
//
// With Config.PrefixRate on, an Initial carrying a token from a source
// prefix whose bucket is empty (the LRU hash map tr_prefixes, which only the
// agent writes, through [Program.PrefixEmptied], when a validated Initial
// takes the last token; package offload/prefixrate) is dropped
// (DropPrefixRate) or left to the agent to refuse (AgentPrefixRate), unless
// its prefix and DCID are an attempt the agent admitted (the LRU hash map
// tr_attempts, written through [Program.AttemptAdmitted]: the other
// datagram of a ClientHello, retransmissions); the program refills the
// bucket by its own clock.
//
// Every packet increments one per-CPU counter by Reason ([Program.Counters]).
//
// # Cache memory
//
// The two Bloom tables are the two 1 MiB entries of the BPF array map
// fp_tables and the generation word the one entry of fp_gen, both created
// with BPF_F_MMAPABLE. [Load] maps them into the process and runs
// [fastpath.NewShared] over that memory, so [Program.Cache] inserts,
// looks up and rotates (the agent owns rotation) exactly the bits the
// program reads, with no syscall. The mappings stay valid until
// [Program.Close]; the Cache must not be used afterwards.
//
// # Fail-open
//
// The agent calls [Program.Beat] with the CLOCK_MONOTONIC time (the clock
// of bpf_ktime_get_ns, see [MonotonicNow]) more often than
// [Config.StaleAfter]. While the last beat is unset (0), in the future, or
// older than that bound, the program passes every packet on the port,
// Initials included, so that the host's own validator takes over.
//
// # Lifetime of the attachment
//
// [Program.Attach] creates a BPF link (link.AttachXDP) that is never
// pinned: the link lives as long as its file descriptor, so the kernel
// detaches the program when the process exits for any reason, a crash or
// SIGKILL included, and nothing outlives the agent in bpffs. Nothing is
// pinned by this package: maps and program go away with their last
// descriptor too. A deployment that wants the fast path to survive agent
// restarts would have to pin the link and maps (and then remove the pins
// itself); that is deliberately not done.
//
// # Testing with BPF_PROG_TEST_RUN
//
// The tests run the loaded program on frames they build. Without live
// frames the kernel only reports the action: bpf_redirect_map returns
// XDP_REDIRECT when the queue's tr_xsks slot holds an AF_XDP socket (the
// test registers an unbound one) and nothing is delivered; with an empty
// slot it returns the fallback action from its flags, XDP_PASS, which is
// what the test run reports. FuzzVerdict checks the program against a
// plain-Go model of the rules above (FuzzVerdictMAC with authenticated
// IDs); TestCrossCheckWithGo checks verdicts and table bits against
// fastpath.Cache; TestFalsePositiveRateMAC counts random DCIDs passing the
// MAC check (-fp-probes).
//
// # Requirements
//
// Linux >= 5.12 (BPF atomics, mmapable arrays, BPF links for XDP) with
// CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN, or root: CAP_PERFMON because the
// verifier accepts the cache header's variable-offset stack reads and
// packet pointer arithmetic only from such a loader. The object is
// generated for both byte orders (bpfel, bpfeb), so the package builds on
// every Linux architecture; the big-endian object is built and vetted but
// has never run (no big-endian machine here). Elsewhere the package holds
// only this documentation. The tests skip, saying why, when not root or when the
// kernel refuses the program (EPERM, EACCES, ENOSYS).
//
// # Not done yet
//
// The AF_XDP sockets behind tr_xsks live in package offload/afxdp, and
// package offload/datapath runs the agent on them; with no socket
// registered for a queue, Initials on it reach the kernel stack. Egress (the host's first
// long-header packets) is not watched by this program. VLAN-tagged frames
// and IPv6 extension headers are passed rather than parsed. A 0-RTT packet
// whose client-chosen DCID is not of the server's CID length is dropped:
// the cache only holds CIDs of that length.
package xdp
