package handshake

import (
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

func TestDecodePacketNumberFromOpenerLargest(t *testing.T) {
	cases := []struct {
		largest   int64
		truncated uint64
		pnLen     int
		want      uint64
	}{
		{0xa82f30ea, 0x9b32, 2, 0xa82f9b32}, // RFC 9000 appendix A.3
		{-1, 0, 1, 0},
		{-1, 2, 4, 2},
		{-1, 0xff, 1, 0xff},
		{0xff, 0x00, 1, 0x100},  // wraps forward
		{0x100, 0xff, 1, 0xff},  // just behind
		{0x17f, 0x00, 1, 0x200}, // past the half window: next one up
		{0x180, 0x7f, 1, 0x17f}, // one below expected
		{654360563, 0xbff4, 3, chachaPN},
		{wire.MaxPacketNumber - 1, 0xff, 1, wire.MaxPacketNumber}, // no step past 2^62
		{wire.MaxPacketNumber - 1, 0x00, 1, wire.MaxPacketNumber - 0xff},
	}
	for _, c := range cases {
		if got := decodePacketNumber(c.largest, c.truncated, c.pnLen); got != c.want {
			t.Errorf("decodePacketNumber(%#x, %#x, %d) = %#x, want %#x", c.largest, c.truncated, c.pnLen, got, c.want)
		}
	}
	// Out-of-range lengths do not panic.
	_ = decodePacketNumber(5, 1, 0)
	_ = decodePacketNumber(5, 1, 9)
}
