// Package quictype holds the QUIC value types that package quic and the
// qlog packages (qlog, qlogwriter) share: connection IDs, stream IDs and
// numbers, versions, packet numbers, byte counts, key phases, encryption
// levels and error codes. Package quic re-exports them under quic-go's
// names (quic.ConnectionID, quic.StreamID, quic.Version, ...), so a value
// from a qlog event and one from a connection have the same type, as in
// quic-go.
package quictype
