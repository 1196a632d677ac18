// Package handshake implements QUIC packet protection for QUIC version 1
// (RFC 9001) and version 2 (RFC 9369): Initial secrets, packet and header
// protection keys for the three TLS 1.3 cipher suites, 1-RTT key updates,
// AEAD usage limits and the Retry integrity tag.
//
// The API follows what crypto/tls's QUIC support hands a connection: for
// each encryption level and direction a cipher suite ID and a traffic
// secret. NewSealer and NewOpener turn those into per-direction packet
// protectors; NewInitialKeys derives the Initial level from the client's
// original Destination Connection ID; AppKeys manages the 1-RTT level
// across key updates.
//
// The per-packet paths (Seal, Open, ProtectPacket, UnprotectHeader,
// UnprotectPacket, the Retry tag) work in place on caller buffers and do
// not allocate, so that an attacker who floods garbage cannot make the
// receiver allocate. Header offsets come from the caller, which parses
// headers with internal/wire; this package does not parse QUIC headers.
//
// Sealer, Opener and AppKeys keep scratch buffers inside and are not safe
// for concurrent use: each connection (or agent worker) owns its own.
// The Retry tag functions are safe for concurrent use.
package handshake
