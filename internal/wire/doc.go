// Package wire implements the QUIC wire format: variable-length integers,
// packet headers, frames and transport parameters (RFC 9000, RFC 9369,
// RFC 9221, RFC 9368).
//
// Parsers take a []byte and return sub-slices of it instead of copies, so
// the packet buffer must outlive the parsed values. Builders follow the
// append convention: AppendXxx(b, ...) returns b extended with the encoding.
package wire
