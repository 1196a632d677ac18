package protocol

// ECN is the two-bit Explicit Congestion Notification codepoint of an IP
// header (RFC 3168 section 5), with the header's bit values: the socket
// layer reads and writes it as is, and ACK frames count each mark.
type ECN uint8

// The ECN codepoints. ECNNotECT carries no mark and is not counted.
const (
	ECNNotECT ECN = 0b00
	ECNECT1   ECN = 0b01
	ECNECT0   ECN = 0b10
	ECNCE     ECN = 0b11
)

// String returns the codepoint's name as RFC 3168 and qlog write it:
// "Not-ECT", "ECT(0)", "ECT(1)" or "CE".
func (e ECN) String() string {
	switch e {
	case ECNNotECT:
		return "Not-ECT"
	case ECNECT0:
		return "ECT(0)"
	case ECNECT1:
		return "ECT(1)"
	case ECNCE:
		return "CE"
	}
	return "invalid ECN"
}
