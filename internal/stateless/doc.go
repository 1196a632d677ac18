// Package stateless answers the packets a QUIC server receives before it
// holds any state for them: the one set of rules that the QUIC stack's
// listener (quic, host mode) and the offload agent (offload/agent) both
// apply, so that a client meets the same server whichever of the two
// answered it.
//
// A Responder knows the versions the server speaks. Examine reads the first
// packet of a datagram that no connection claims and decides what it is: a
// long header of another version, which gets Version Negotiation (built
// into the caller's buffer) when the datagram is large enough and its
// version is not 0; an Initial that may open a connection; or something to
// drop, and why. For an Initial the caller does its own token and policy
// work and then asks the Responder for the answer it chose: a Retry with
// the RFC 9001 section 5.8 integrity tag (AppendRetry around the caller's
// token, or AppendIssuedRetry, which has a token.Issuer mint it in place;
// the caller picks the SCID), or a stateless close, an Initial carrying
// CONNECTION_CLOSE protected with the keys of the client's DCID
// (AppendClose, for INVALID_TOKEN and CONNECTION_REFUSED).
//
// The package is sans-IO: it reads and writes byte slices and never a
// socket. Examine and the Retry builders do not allocate when the
// destination buffer has MaxReplyLen bytes of capacity; AppendClose derives
// Initial keys, whose AES state crypto/aes allocates. A Responder is
// immutable and safe for concurrent use (an Issuer is not: each caller
// passes its own). docs/address-validation.md lists the rules and where the
// stack and the agent disagreed before this package.
package stateless
