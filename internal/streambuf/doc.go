// Package streambuf holds the data buffers behind QUIC streams and CRYPTO
// streams (RFC 9000 sections 2, 3, 19.6 and 19.8).
//
// RecvBuffer reassembles data that arrives out of order, duplicated or
// overlapping, and hands it out in order. SendBuffer keeps written data until
// the peer acknowledges it, packs it into frames and retransmits lost ranges
// before new data.
//
// SendBuffer copies data into fixed-size chunks taken from a process-wide
// sync.Pool; RecvBuffer uses those chunks for in-order bulk data and buffers
// sized for what arrived for data out of order (recv_store.go), so a peer
// scattering small frames over its window makes us hold about what it sent.
// Streams in steady state allocate nothing and give their memory back as
// soon as the data is read (receive side) or acknowledged (send side).
//
// Flow control is not done here: the connection checks the peer's limits
// before it pushes data. A RecvBuffer still refuses data beyond its max-buffer
// bound, so a bug elsewhere cannot make memory grow without limit.
//
// None of the types are safe for concurrent use; the connection drives them
// under its own lock.
package streambuf
