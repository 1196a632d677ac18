package fastpath

// Normative parameters, shared with dpa-firmware/include/tr_fastpath.h.
const (
	// MLog2 is log2 of the number of bits per table.
	MLog2 = 23
	// M is the number of bits per table (1 MiB).
	M = 1 << MLog2
	// K is the number of bit indices per CID.
	K = 3
	// TableWords is the number of uint64 words per table.
	TableWords = M / 64
	// MaxCIDLen is the longest connection ID QUIC v1 allows (RFC 9000).
	MaxCIDLen = 20
	// DefaultCIDLen is the server's default fixed CID length.
	DefaultCIDLen = 8
)

// Indices returns the K bit indices of a hash h: (lo + i*hi) mod M for
// i = 0..K-1, with lo and hi the low and high 32 bits of h and the sum and
// product computed in wrapping uint32 arithmetic. Because M divides 2^32 the
// wrap does not change the result, so 64-bit implementations agree too.
func Indices(h uint64) [K]uint32 {
	lo, hi := uint32(h), uint32(h>>32)
	var idx [K]uint32
	for i := range idx {
		idx[i] = (lo + uint32(i)*hi) & (M - 1)
	}
	return idx
}
