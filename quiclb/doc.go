// Package quiclb makes and reads server connection IDs in the layout of
// QUIC-LB (draft-ietf-quic-load-balancers, "QUIC-LB: Generating Routable
// QUIC Connection IDs"), extended with a worker index and a short MAC, so
// one ID serves three ends (docs/cid.md):
//
//   - routing across a fleet: the first octet carries the config rotation
//     codepoint and the self-encoded length, followed by the server ID in
//     plaintext (the draft's unencrypted mode), so any QUIC-LB-aware load
//     balancer routes a migrating client to the right host;
//   - steering on one host: the last octet of the server ID is the index of
//     the worker (socket and receive loop) that owns the connection, which
//     the sk_reuseport program of package offload/reuseport reads;
//   - a stateless fast path: 4 bytes of SipHash-2-4 over the rest of the ID,
//     under a key derived from the deployment's root secret, which the XDP
//     program and the DPA firmware verify (dpa-firmware/include/tr_cid.h)
//     instead of looking the ID up in the Bloom cache.
//
// Layout of an ID of Codec.Len bytes:
//
//	octet 0         config rotation (3 bits) | length of the rest (5 bits)
//	1 .. h          host ID (Config.HostID, h = len(HostID), may be empty)
//	h+1             worker index
//	h+2 ..          nonce (Config.NonceLen random bytes, at least 4)
//	last 4 octets   MAC (when Config.MACKey is set)
//
// The draft's plaintext algorithm alone is AppendPlaintext and
// ParsePlaintext; a Generator plugs a Codec into quic.Transport's
// ConnectionIDGenerator hook.
package quiclb
