package connid

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
)

// RFC 4231 section 4.2, test case 1: HMAC-SHA256 with a 20-byte key of
// 0x0b and data "Hi There". HMAC zero-pads short keys, so the same key
// padded to 32 bytes gives the same MAC.
func TestResetTokenRFC4231(t *testing.T) {
	var key [32]byte
	copy(key[:], bytes.Repeat([]byte{0x0b}, 20))
	cid := mustCID(t, []byte("Hi There"))
	want := "b0344c61d8db38535ca8afceaf0bf12b"
	if got := ResetTokenFor(key, cid); hex.EncodeToString(got[:]) != want {
		t.Fatalf("ResetTokenFor = %x, want %s", got, want)
	}
}

func TestResetTokenMatchesHMAC(t *testing.T) {
	var key [32]byte
	for i := range key {
		key[i] = byte(0xa0 + i)
	}
	seen := map[[TokenLen]byte]bool{}
	for n := 0; n <= protocol.MaxConnectionIDLen; n++ {
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(i * 7)
		}
		cid := mustCID(t, raw)
		mac := hmac.New(sha256.New, key[:])
		mac.Write(raw)
		want := mac.Sum(nil)[:TokenLen]
		got := ResetTokenFor(key, cid)
		if !bytes.Equal(got[:], want) {
			t.Fatalf("len %d: ResetTokenFor = %x, want %x", n, got, want)
		}
		if seen[got] {
			t.Fatalf("len %d: token repeats", n)
		}
		seen[got] = true
	}
	prev := key
	key[0] ^= 1
	if ResetTokenFor(key, mustCID(t, []byte{1})) == ResetTokenFor(prev, mustCID(t, []byte{1})) {
		t.Fatal("token does not depend on the key")
	}
}

func TestResetTokenAllocs(t *testing.T) {
	var key [32]byte
	cid := mustCID(t, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	var sink [TokenLen]byte
	if n := testing.AllocsPerRun(1000, func() { sink = ResetTokenFor(key, cid) }); n != 0 {
		t.Fatalf("ResetTokenFor allocates %v times", n)
	}
	_ = sink
}
