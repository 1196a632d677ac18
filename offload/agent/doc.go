// Package agent is the stateless Retry agent engine of TurboRetry (docs/design.md,
// "Address validation architecture"; the paper's Arm agent, figure 7).
//
// The engine sees UDP datagrams from clients, one at a time, and returns a
// verdict for each: send a reply (a Retry or a Version Negotiation packet)
// back to the sender, forward the datagram unchanged to the host, or drop it.
// It keeps no per-connection state: what it learns about admitted connections
// it hands to a fast-path connection cache (the CIDCache interface), and
// everything else lives in the universal token.
//
//   - An Initial (QUIC v1 or v2) of at least 1200 bytes without a token is
//     answered with a Retry carrying an agent-issued retry token that binds
//     the client's address, the original DCID and the Retry's fresh SCID.
//   - An Initial with a valid retry token whose RSCID is the packet's DCID, or
//     with a valid new_token token, is forwarded and its DCID admitted to the
//     cache. An invalid new_token token gets a Retry (RFC 9000 section
//     8.1.3); any other bad token is dropped, counted by the token's reason.
//   - A new_token token is single-use (RFC 9000 section 8.1.4): a
//     token.ReplayFilter shared by the workers remembers it with the DCID
//     of its first Initial; the same token under another DCID, or again
//     after the retransmission window, gets a Retry (reason token_replayed). The host applies the same rule to what the
//     agent forwards, so the two agree. The connection's later Initials
//     (DCID known to the cache) pass unchecked.
//   - With Config.PrefixRate, a connection attempt whose first Initial's
//     token validated takes a token from its source prefix's bucket, once
//     (package offload/prefixrate): the attempt, its prefix and first DCID,
//     is remembered, and its other Initials take none. While the bucket is
//     empty, every Initial with a token from the prefix is answered with
//     CONNECTION_REFUSED (or dropped) before its token is checked, except
//     an admitted attempt's (and a known DCID's, whose token must then tie
//     it to one); Config.OnPrefixEmpty hands the bucket, and
//     Config.OnAttemptAdmitted each admitted attempt, to the XDP program,
//     which then sheds the prefix's other Initials itself.
//   - A long header of an unknown version (1200 bytes or more) gets Version
//     Negotiation; version 0 and everything else is dropped.
//   - An Initial whose DCID is under 8 bytes opens nothing unless a valid
//     retry token vouches for it (RFC 9000 section 7.2).
//
// Which datagrams get Version Negotiation, which Initials may open a
// connection and the Retry packet itself are the stateless responder's
// (internal/stateless), which the QUIC stack's listener uses too, so the
// agent and the host answer alike (docs/address-validation.md, "Stateless
// answers"). The one difference left is deliberate: a bad retry token is
// dropped here, where the host closes the attempt with INVALID_TOKEN.
//   - On the way out, ObserveEgress reads the host's new SCID from its
//     Initial and Handshake packets and admits it to the cache.
//
// Concurrency: an Engine owns N Workers. A Worker is not safe for concurrent
// use; the datapath gives each worker to exactly one goroutine (typically one
// per RX queue or AF_XDP socket) and dispatches packets itself, so the hot
// path takes no lock and uses no atomic read-modify-write, except for the
// replay filter's shard lock on Initials with a valid new_token token.
// Engine methods (Stats, Heartbeat, Pause, Resume) are safe from any
// goroutine.
package agent
