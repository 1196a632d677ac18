package wire

// AckRange is an inclusive range of acknowledged packet numbers, as carried
// in an ACK frame (RFC 9000 section 19.3.1). Recovery and ACK generation use
// the same type so ranges pass between them without conversion.
type AckRange struct {
	Smallest uint64
	Largest  uint64
}

// Len returns the number of packet numbers the range covers.
func (r AckRange) Len() uint64 { return r.Largest - r.Smallest + 1 }
