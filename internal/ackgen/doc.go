// Package ackgen tracks the packets received in one QUIC packet number
// space and decides when and what to acknowledge (RFC 9000 section 13.2).
//
// A connection keeps one Tracker per packet number space. For each packet it
// asks IsDuplicate before processing (a duplicate must be dropped unprocessed)
// and calls Received after processing. AckNow and AlarmTime say when an ACK
// frame is due; BuildAck writes the ranges into a buffer the caller owns, so
// the steady state allocates nothing.
//
// A Tracker is not safe for concurrent use: the connection drives it under its
// own lock.
package ackgen
