package wire

// NoPacketNumber stands for "no packet acknowledged / received yet" in
// PacketNumberLen and DecodePacketNumber. Adding 1 wraps it to 0, which
// is exactly what RFC 9000 appendix A expects for that case.
const NoPacketNumber = ^uint64(0)

// MaxPacketNumber is the largest packet number, 2^62-1.
const MaxPacketNumber = 1<<62 - 1

// PacketNumberLen returns how many bytes (1-4) to send pn in, given the
// largest packet number the peer acknowledged (RFC 9000 appendix A.2): the
// encoding must cover more than twice the number of packets in flight.
func PacketNumberLen(pn, largestAcked uint64) int {
	unacked := pn - largestAcked // wraps to pn+1 for NoPacketNumber
	switch {
	case unacked < 1<<7:
		return 1
	case unacked < 1<<15:
		return 2
	case unacked < 1<<23:
		return 3
	default:
		return 4
	}
}

// AppendPacketNumber appends the low n bytes (1-4) of pn, big-endian.
// An invalid n panics.
func AppendPacketNumber(b []byte, pn uint64, n int) []byte {
	switch n {
	case 1:
		return append(b, byte(pn))
	case 2:
		return append(b, byte(pn>>8), byte(pn))
	case 3:
		return append(b, byte(pn>>16), byte(pn>>8), byte(pn))
	case 4:
		return append(b, byte(pn>>24), byte(pn>>16), byte(pn>>8), byte(pn))
	}
	panic("wire: packet number length must be 1 to 4")
}

// DecodePacketNumber recovers a full packet number from its n-byte
// truncation, given the largest packet number received so far in the
// packet number space (NoPacketNumber if none), as in RFC 9000 appendix
// A.3: the candidate closest to largest+1 wins.
func DecodePacketNumber(largest, truncated uint64, n int) uint64 {
	expected := largest + 1
	win := uint64(1) << (8 * n)
	hwin := win / 2
	mask := win - 1
	candidate := expected&^mask | truncated&mask
	switch {
	case candidate+hwin <= expected && candidate < MaxPacketNumber+1-win:
		return candidate + win
	case candidate > expected+hwin && candidate >= win:
		return candidate - win
	}
	return candidate
}
