package wire

import "testing"

// RFC 9000 appendix A.2 examples.
func TestPacketNumberLenRFC(t *testing.T) {
	if n := PacketNumberLen(0xac5c02, 0xabe8b3); n != 2 {
		t.Errorf("0xac5c02 after 0xabe8b3: %d bytes, want 2", n)
	}
	if n := PacketNumberLen(0xace8fe, 0xabe8b3); n != 3 {
		t.Errorf("0xace8fe after 0xabe8b3: %d bytes, want 3", n)
	}
	for _, c := range []struct {
		pn, acked uint64
		want      int
	}{
		{0, NoPacketNumber, 1},
		{126, NoPacketNumber, 1},
		{127, NoPacketNumber, 2}, // 128 packets unacknowledged
		{200, 100, 1},
		{1 << 30, 0, 4},
	} {
		if n := PacketNumberLen(c.pn, c.acked); n != c.want {
			t.Errorf("PacketNumberLen(%d, %d) = %d, want %d", c.pn, c.acked, n, c.want)
		}
	}
}

// RFC 9000 appendix A.3 example plus edge cases around the window.
func TestDecodePacketNumber(t *testing.T) {
	tests := []struct {
		largest, truncated uint64
		n                  int
		want               uint64
	}{
		{0xa82f30ea, 0x9b32, 2, 0xa82f9b32}, // the RFC example
		{NoPacketNumber, 0, 1, 0},
		{NoPacketNumber, 5, 2, 5},
		{0xff, 0x02, 1, 0x102},                              // wraps forward
		{0x101, 0xff, 1, 0xff},                              // slightly behind
		{0x7f, 0xff, 1, 0xff},                               // candidate above expected but within half window
		{0x7f, 0x00, 1, 0x100},                              // 0x00 is closer above
		{10, 250, 1, 250},                                   // cannot go below 0
		{MaxPacketNumber - 1, 0, 1, MaxPacketNumber - 0xff}, // cannot exceed 2^62-1
	}
	for _, tt := range tests {
		if got := DecodePacketNumber(tt.largest, tt.truncated, tt.n); got != tt.want {
			t.Errorf("DecodePacketNumber(%#x, %#x, %d) = %#x, want %#x", tt.largest, tt.truncated, tt.n, got, tt.want)
		}
	}
}

func TestPacketNumberEncodeDecode(t *testing.T) {
	for _, largest := range []uint64{0, 1000, 0xabe8b3, 1 << 40} {
		for _, delta := range []uint64{1, 2, 100, 30000, 1 << 20} {
			pn := largest + delta
			n := PacketNumberLen(pn, largest)
			b := AppendPacketNumber(nil, pn, n)
			tr, err := ReadPacketNumber(b, n)
			if err != nil {
				t.Fatal(err)
			}
			if got := DecodePacketNumber(largest, tr, n); got != pn {
				t.Errorf("pn %d after %d in %d bytes decoded as %d", pn, largest, n, got)
			}
		}
	}
	if _, err := ReadPacketNumber([]byte{1}, 2); err != ErrPacketTruncated {
		t.Errorf("truncated: %v", err)
	}
	if _, err := ReadPacketNumber([]byte{1, 2, 3, 4, 5}, 5); err != ErrInvalidPacketNumber {
		t.Errorf("length 5: %v", err)
	}
}
