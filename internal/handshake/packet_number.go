package handshake

import "github.com/turboretry/turboretry/internal/wire"

// decodePacketNumber recovers a full packet number from its truncated
// pnLen-byte encoding with wire.DecodePacketNumber (RFC 9000 appendix A.3);
// largest is the largest packet number received in the space so far, or -1
// if none, as the Opener API takes it.
func decodePacketNumber(largest int64, truncated uint64, pnLen int) uint64 {
	if pnLen < 1 || pnLen > maxPNLen {
		return truncated
	}
	l := wire.NoPacketNumber // "none yet": the expected number is 0
	if largest >= 0 {
		l = uint64(largest)
	}
	return wire.DecodePacketNumber(l, truncated, pnLen)
}
