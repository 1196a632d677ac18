// Package connid manages QUIC connection IDs and stateless resets
// (RFC 9000 sections 5.1, 10.3, 19.15 and 19.16).
//
// A connection uses two managers: LocalCIDs for the IDs it issues to its
// peer (its source connection IDs, which the Transport routes on) and
// RemoteCIDs for the IDs the peer issued (the destination connection IDs it
// sends with). Neither is safe for concurrent use; a connection drives both
// from its own goroutine. Generator is safe for concurrent use so one
// Transport can share it between connections.
package connid
