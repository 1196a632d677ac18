// Package announce is the control channel of the split (DPU) mode: the host
// announces the connection IDs its QUIC stack routes to the agent, which
// puts them into the fast-path cache.
//
// # Why
//
// In the split mode the agent runs in a separate process (on a BlueField-3,
// the Arm cores) between the wire port and the host. The host's QUIC stack
// issues most connection IDs inside encrypted NEW_CONNECTION_ID frames the
// agent cannot read, so learning them from egress traffic (docs/design.md) would
// miss them and the fast path would drop a client that switches to one. The
// host therefore announces every connection ID it starts routing
// (quic.Transport.ConnectionIDAdded -> Announcer.Add) and, every Interval,
// all active ones again, so an agent that restarted with an empty cache
// learns them back within one interval. Re-announcing also refreshes the
// cache entries of long-lived connections.
//
// # Wire format, version 1
//
// One UDP datagram per message, at most MaxMessageSize (1200) bytes, all
// integers big-endian:
//
//	offset  size         field
//	0       4            magic "TRCA"
//	4       1            version, 1
//	5       1            cidLen, 1..20: the length of every CID in the message
//	6       2            count, >= 1
//	8       8            timestamp: send time, milliseconds since the Unix epoch
//	16      count*cidLen the connection IDs, back to back
//	16+n    16           MAC: HMAC-SHA256(key, bytes 0 .. 16+n-1), first 16 bytes
//
// The datagram's length must be exactly 32 + count*cidLen. With 8-byte
// connection IDs a message carries up to 146 of them (MaxCIDsPerMessage).
//
// # Security
//
//   - Authenticity: the MAC key is derived from the deployment's root secret
//     with its own label (Key: HKDF-Expand-Label(root, "turboretry cid
//     announce", "", 32)), so only the host and the agent can announce, and
//     the key is unrelated to the token and fast-path keys. A forged
//     announcement would let an attacker open the fast path for connection
//     IDs of its choice; the 128-bit tag makes that a 2^-128 guess per
//     datagram. Tags are compared in constant time.
//   - Freshness: the Listener rejects a message whose timestamp is more than
//     MaxAge (default 30 s) in the past or in the future. A replay inside
//     that window only re-inserts connection IDs the host really routed
//     within MaxAge, so it can keep a retired connection ID in the cache no
//     longer than MaxAge plus the cache's aging window; there is no
//     sequence number to track. The bound also limits the clock skew
//     tolerated between the host and the DPU.
//   - Confidentiality: none. Connection IDs travel in clear in every QUIC
//     packet anyway. The channel belongs on the internal host <-> DPU link
//     (or loopback), not on the wire port.
//   - Cost of garbage: the cheap checks (length, magic, version, cidLen) run
//     before the single HMAC; a rejected message is counted by reason
//     (ListenerStats.Rejected), logged at debug level, never inserts
//     anything, and never stops the Listener.
//   - Secret reload: SetKey on both sides. The Listener keeps accepting the
//     previous key for MaxAge after its SetKey, so reloading the agent first
//     and the host second loses nothing; in the other order, announcements
//     sent in between are rejected (bad MAC) and the next re-announce
//     repairs the cache.
package announce
