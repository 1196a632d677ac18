package handshake

import (
	"errors"
	"testing"
)

// serverInitialOpener opens the RFC 9001 client Initial.
func serverInitialOpener(t testing.TB) *Opener {
	t.Helper()
	_, o, err := NewInitialKeys(unhex(rfcDCID), Version1, false)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Flipping any bit of the ciphertext, the tag, the packet number or any
// header byte makes opening fail with ErrDecryptionFailed.
func TestOpenRejectsTampering(t *testing.T) {
	orig := unhex(rfc9001.clientProtected)
	positions := []struct {
		name string
		at   int
	}{
		{"first byte type bits", 0},
		{"version", 3},
		{"DCID", 10},
		{"length", 17},
		{"packet number", 20},
		{"ciphertext start", 22},
		{"ciphertext middle", 600},
		{"tag", len(orig) - 1},
		{"tag start", len(orig) - 16},
	}
	o := serverInitialOpener(t)
	for _, p := range positions {
		packet := append([]byte(nil), orig...)
		packet[p.at] ^= 0x04
		_, _, err := o.UnprotectPacket(packet, 18, -1)
		if !errors.Is(err, ErrDecryptionFailed) {
			t.Errorf("%s (byte %d): err = %v, want ErrDecryptionFailed", p.name, p.at, err)
		}
	}
	if o.AuthFailures() != uint64(len(positions)) {
		t.Errorf("AuthFailures = %d, want %d", o.AuthFailures(), len(positions))
	}
	// A flipped packet number length bit changes where the payload
	// starts: still a clean failure.
	packet := append([]byte(nil), orig...)
	packet[0] ^= 0x01
	if _, _, err := o.UnprotectPacket(packet, 18, -1); !errors.Is(err, ErrDecryptionFailed) {
		t.Errorf("pn length bit: err = %v", err)
	}
	// The wrong direction's keys (client opening its own packet).
	_, clientOpener, err := NewInitialKeys(unhex(rfcDCID), Version1, true)
	if err != nil {
		t.Fatal(err)
	}
	packet = append([]byte(nil), orig...)
	if _, _, err := clientOpener.UnprotectPacket(packet, 18, -1); !errors.Is(err, ErrDecryptionFailed) {
		t.Errorf("wrong direction: err = %v", err)
	}
	// The wrong version's keys.
	_, v2Opener, err := NewInitialKeys(unhex(rfcDCID), Version2, false)
	if err != nil {
		t.Fatal(err)
	}
	packet = append([]byte(nil), orig...)
	if _, _, err := v2Opener.UnprotectPacket(packet, 18, -1); !errors.Is(err, ErrDecryptionFailed) {
		t.Errorf("wrong version: err = %v", err)
	}
}

// Every truncation of a valid packet fails cleanly: too short for the
// sample, or failing authentication; never a panic.
func TestTruncatedPackets(t *testing.T) {
	orig := unhex(rfc9001.clientProtected)
	o := serverInitialOpener(t)
	for n := 0; n < len(orig); n++ {
		packet := append([]byte(nil), orig[:n]...)
		_, _, err := o.UnprotectPacket(packet, 18, -1)
		switch {
		case n <= 18:
			if !errors.Is(err, ErrInvalidPacketNumberOffset) {
				t.Fatalf("%d bytes: err = %v, want ErrInvalidPacketNumberOffset", n, err)
			}
		case n < 18+4+16:
			if !errors.Is(err, ErrPacketTooShort) {
				t.Fatalf("%d bytes: err = %v, want ErrPacketTooShort", n, err)
			}
		default:
			if !errors.Is(err, ErrDecryptionFailed) {
				t.Fatalf("%d bytes: err = %v, want ErrDecryptionFailed", n, err)
			}
		}
	}
	// Short header A.5 packet, truncated.
	chacha, err := NewOpener(0x1303, unhex(chachaSecret), Version1)
	if err != nil {
		t.Fatal(err)
	}
	short := unhex(rfc9001.chachaProtected)
	for n := 0; n < len(short); n++ {
		packet := append([]byte(nil), short[:n]...)
		if _, _, err := chacha.UnprotectPacket(packet, 1, -1); err == nil {
			t.Fatalf("%d-byte short packet opened", n)
		}
	}
	// Nonsense offsets.
	for _, off := range []int{-1 << 62, -1, 0, len(orig), len(orig) + 1, 1 << 62} {
		packet := append([]byte(nil), orig...)
		if _, _, err := o.UnprotectHeader(packet, off); !errors.Is(err, ErrInvalidPacketNumberOffset) {
			t.Errorf("offset %d: err = %v", off, err)
		}
	}
	// Open with a ciphertext shorter than the tag.
	if _, err := o.Open(nil, make([]byte, 5), 0, nil); !errors.Is(err, ErrDecryptionFailed) {
		t.Errorf("5-byte ciphertext: err = %v", err)
	}
}

func TestProtectPacketRejectsBadInput(t *testing.T) {
	sealer, _, err := NewInitialKeys(unhex(rfcDCID), Version1, true)
	if err != nil {
		t.Fatal(err)
	}
	hdr := unhex(rfc9001.clientHeader) // first byte says 4-byte packet number
	long := append(append([]byte(nil), hdr...), make([]byte, 100)...)
	cases := []struct {
		name     string
		packet   []byte
		pnOffset int
		pnLen    int
		want     error
	}{
		{"pnLen 0", long, 18, 0, ErrInvalidPacketNumberLength},
		{"pnLen 5", long, 18, 5, ErrInvalidPacketNumberLength},
		{"pnLen disagrees with first byte", long, 18, 2, ErrInvalidPacketNumberLength},
		{"offset 0", long, 0, 4, ErrInvalidPacketNumberOffset},
		{"offset negative", long, -3, 4, ErrInvalidPacketNumberOffset},
		{"offset past end", long, len(long) - 3, 4, ErrInvalidPacketNumberOffset},
		{"empty packet", nil, 1, 1, ErrInvalidPacketNumberOffset},
		// header and no payload: 4-byte pn plus 16-byte tag is exactly
		// the sample, so this one works; one byte of pn less does not.
		{"too short for sample", []byte{0x40, 0x00}, 1, 1, ErrPacketTooShort},
	}
	for _, c := range cases {
		packet := append([]byte(nil), c.packet...)
		if _, err := sealer.ProtectPacket(packet, c.pnOffset, c.pnLen, 2); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := sealer.ProtectPacket(append([]byte(nil), hdr...), 18, 4, 2); err != nil {
		t.Errorf("header-only packet with 4-byte pn: %v", err)
	}
	if err := sealer.ApplyHeaderProtection(hdr, 18, 4); !errors.Is(err, ErrPacketTooShort) {
		t.Errorf("ApplyHeaderProtection without payload: err = %v", err)
	}
	if err := sealer.ApplyHeaderProtection(hdr, 18, 7); !errors.Is(err, ErrInvalidPacketNumberLength) {
		t.Errorf("ApplyHeaderProtection pnLen 7: err = %v", err)
	}
	if err := sealer.ApplyHeaderProtection(hdr, 30, 1); !errors.Is(err, ErrInvalidPacketNumberOffset) {
		t.Errorf("ApplyHeaderProtection offset 30: err = %v", err)
	}
}
