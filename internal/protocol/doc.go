// Package protocol declares the QUIC value types every layer shares:
// versions, perspectives, packet number spaces, ECN codepoints and
// connection IDs. It sits in the lowest tier, so the sans-IO packages
// (wire, handshake, recovery, ackgen, flowcontrol, connid, udpio) and the
// offload core use it directly; quic/quictype re-exports the types by
// alias, so that quic.Version, quic.Perspective and quic.ConnectionID are
// these types and a value crosses a layer without conversion.
package protocol
