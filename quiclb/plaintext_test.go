package quiclb

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestDraftPlaintextVectors checks the "Unencrypted CIDs" test vectors of
// draft-ietf-quic-load-balancers (appendix "Load Balancer Test Vectors",
// where every server encodes the CID length):
//
//	cr_bits sid        nonce     cid
//	0       c4605e     4504cc4f  07c4605e4504cc4f
//	1       350d28b420 3487d970b 20a350d28b4203487d970b
//
// The second line is printed without zero padding: its nonce has 9 hex
// digits, and the cid shows the first octet 0x2a as "2" then "0a" (cr_bits
// 1 in the three high bits, length 10 in the five low ones). The bytes are
// 2a | 350d28b420 | 03487d970b: a 5-byte server ID and a 5-byte nonce, 11
// bytes in all, which is what the printed cid's 22 digits amount to.
func TestDraftPlaintextVectors(t *testing.T) {
	for _, v := range []struct {
		configID   uint8
		sid, nonce string
		cid        string
	}{
		{0, "c4605e", "4504cc4f", "07c4605e4504cc4f"},
		{1, "350d28b420", "03487d970b", "2a350d28b42003487d970b"},
	} {
		sid, nonce, want := unhex(t, v.sid), unhex(t, v.nonce), unhex(t, v.cid)
		got, err := AppendPlaintext(nil, v.configID, sid, nonce)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("AppendPlaintext(%d, %s, %s) = %x, %v; want %x", v.configID, v.sid, v.nonce, got, err, want)
		}
		cr, gotSID, gotNonce, err := ParsePlaintext(want, len(sid))
		if err != nil || cr != v.configID || !bytes.Equal(gotSID, sid) || !bytes.Equal(gotNonce, nonce) {
			t.Errorf("ParsePlaintext(%s) = %d, %x, %x, %v", v.cid, cr, gotSID, gotNonce, err)
		}
	}
}

func TestPlaintextLimits(t *testing.T) {
	four := []byte{1, 2, 3, 4}
	for _, c := range []struct {
		name     string
		configID uint8
		sid, n   []byte
		want     error
	}{
		{"unroutable codepoint", UnroutableConfigID, []byte{1}, four, ErrConfigID},
		{"empty server ID", 0, nil, four, ErrLength},
		{"nonce under 4", 0, []byte{1}, four[:3], ErrLength},
		{"over 19", 0, make([]byte, 16), four, ErrLength},
	} {
		if _, err := AppendPlaintext(nil, c.configID, c.sid, c.n); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if b, err := AppendPlaintext(nil, 6, make([]byte, 15), four); err != nil || len(b) != 20 || b[0] != 6<<5|19 {
		t.Fatalf("longest ID: %x, %v", b, err)
	}
	cid := unhex(t, "07c4605e4504cc4f")
	bad := map[string][]byte{
		"empty":          nil,
		"length octet":   append([]byte{0x08}, cid[1:]...),
		"unroutable":     append([]byte{0xe7}, cid[1:]...),
		"truncated":      cid[:7],
		"too long":       append(bytes.Clone(cid), make([]byte, 13)...),
		"server ID 5 of": cid, // parsed below with a server ID too long for a 4-byte nonce
	}
	for name, b := range bad {
		sidLen := 3
		if name == "server ID 5 of" {
			sidLen = 4
		}
		if _, _, _, err := ParsePlaintext(b, sidLen); err == nil {
			t.Errorf("%s: ParsePlaintext(%x) accepted", name, b)
		}
	}
}
