package protocol

import "testing"

// TestECNBits pins the codepoints to the IP header's bits (RFC 3168
// section 5), which the socket layer passes through unconverted.
func TestECNBits(t *testing.T) {
	for _, c := range []struct {
		ecn  ECN
		bits uint8
		name string
	}{
		{ECNNotECT, 0b00, "Not-ECT"},
		{ECNECT1, 0b01, "ECT(1)"},
		{ECNECT0, 0b10, "ECT(0)"},
		{ECNCE, 0b11, "CE"},
	} {
		if uint8(c.ecn) != c.bits || c.ecn.String() != c.name {
			t.Errorf("%v: bits %02b, want %02b (%s)", c.ecn, uint8(c.ecn), c.bits, c.name)
		}
	}
}
