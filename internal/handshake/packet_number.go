package handshake

// maxPacketNumber is the largest packet number QUIC allows (2^62 - 1).
const maxPacketNumber = 1<<62 - 1

// DecodePacketNumber recovers a full packet number from its truncated
// pnLen-byte encoding (RFC 9000 appendix A.3): the candidate closest to
// largest+1, where largest is the largest packet number received in the
// space so far, or -1 if none.
func DecodePacketNumber(largest int64, truncated uint64, pnLen int) uint64 {
	if pnLen < 1 || pnLen > maxPNLen {
		return truncated
	}
	var expected uint64
	if largest >= 0 {
		expected = uint64(largest) + 1
	}
	window := uint64(1) << (8 * pnLen)
	half := window / 2
	mask := window - 1
	candidate := expected&^mask | truncated&mask
	switch {
	case expected >= half && candidate <= expected-half && candidate < maxPacketNumber+1-window:
		return candidate + window
	case candidate > expected+half && candidate >= window:
		return candidate - window
	}
	return candidate
}
