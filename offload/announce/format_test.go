package announce

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

func TestMaxCIDsPerMessage(t *testing.T) {
	for _, c := range []struct{ cidLen, want int }{
		{0, 0}, {-1, 0}, {21, 0}, {1, 1168}, {4, 292}, {8, 146}, {16, 73}, {20, 58},
	} {
		if got := MaxCIDsPerMessage(c.cidLen); got != c.want {
			t.Errorf("MaxCIDsPerMessage(%d) = %d, want %d", c.cidLen, got, c.want)
		}
	}
	for l := 1; l <= MaxCIDLen; l++ {
		n := MaxCIDsPerMessage(l)
		if size := HeaderLen + n*l + MACLen; size > MaxMessageSize || size+l <= MaxMessageSize || n > 0xffff {
			t.Errorf("cidLen %d: %d IDs make %d bytes", l, n, size)
		}
	}
}

// TestMessageLayout checks every field at its documented offset and the MAC
// against an independent HMAC-SHA256.
func TestMessageLayout(t *testing.T) {
	ids := cids(3, 8)
	msg := encode(testKey, 8, t0, ids)
	if len(msg) != 16+3*8+16 {
		t.Fatalf("length %d", len(msg))
	}
	if string(msg[0:4]) != "TRCA" || msg[4] != 1 || msg[5] != 8 || binary.BigEndian.Uint16(msg[6:8]) != 3 {
		t.Fatalf("header % x", msg[:8])
	}
	if ts := binary.BigEndian.Uint64(msg[8:16]); ts != uint64(t0.UnixMilli()) {
		t.Fatalf("timestamp %d", ts)
	}
	if !bytes.Equal(msg[16:40], flat(ids)) {
		t.Fatal("connection IDs not back to back after the header")
	}
	h := hmac.New(sha256.New, testKey[:])
	h.Write(msg[:40])
	if want := h.Sum(nil)[:16]; !bytes.Equal(msg[40:], want) {
		t.Fatalf("MAC %x, want %x", msg[40:], want)
	}

	m, r := parseMessage(msg)
	if r != ReasonNone || m.cidLen != 8 || m.count != 3 || m.timestamp != uint64(t0.UnixMilli()) ||
		!bytes.Equal(m.cids, flat(ids)) || !bytes.Equal(m.mac, msg[40:]) || !bytes.Equal(m.body, msg[:40]) {
		t.Fatalf("parse: %v %+v", r, m)
	}
}

// TestMACStateReuse: a reused state gives the same tags as a fresh one,
// and follows key changes.
func TestMACStateReuse(t *testing.T) {
	var m macState
	body := []byte("some body")
	first := bytes.Clone(m.sum(&testKey, body))
	if !bytes.Equal(m.sum(&testKey, body), first) {
		t.Fatal("reused state differs")
	}
	if bytes.Equal(m.sum(&otherKey, body), first) {
		t.Fatal("key change ignored")
	}
	if !bytes.Equal(m.sum(&testKey, body), first) {
		t.Fatal("switching back differs")
	}
}

func TestParseRejects(t *testing.T) {
	good := encode(testKey, 8, t0, cids(2, 8))
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, c := range []struct {
		name string
		msg  []byte
		want Reason
	}{
		{"empty", nil, ReasonShort},
		{"header only", good[:HeaderLen], ReasonShort},
		{"one short of minimum", good[:HeaderLen+MACLen-1], ReasonShort},
		{"magic", mut(func(b []byte) []byte { b[3] = 'B'; return b }), ReasonMagic},
		{"version 0", mut(func(b []byte) []byte { b[4] = 0; return b }), ReasonVersion},
		{"version 2", mut(func(b []byte) []byte { b[4] = 2; return b }), ReasonVersion},
		{"cidLen 0", mut(func(b []byte) []byte { b[5] = 0; return b }), ReasonMalformed},
		{"cidLen 21", mut(func(b []byte) []byte { b[5] = 21; return b }), ReasonMalformed},
		{"count 0", mut(func(b []byte) []byte { b[6], b[7] = 0, 0; return b }), ReasonMalformed},
		{"count too big", mut(func(b []byte) []byte { b[7] = 3; return b }), ReasonMalformed},
		{"count too small", mut(func(b []byte) []byte { b[7] = 1; return b }), ReasonMalformed},
		{"truncated", good[:len(good)-1], ReasonMalformed},
		{"trailing byte", append(bytes.Clone(good), 0), ReasonMalformed},
		{"oversized", encodeRaw(8, MaxCIDsPerMessage(8)+1), ReasonMalformed},
		{"count overflow", encodeRaw(1, 0x10000), ReasonMalformed},
	} {
		if _, r := parseMessage(c.msg); r != c.want {
			t.Errorf("%s: reason %v, want %v", c.name, r, c.want)
		}
	}
}

// encodeRaw builds a framed message of n IDs with a count field of n mod
// 2^16 and a zero MAC, bypassing appendMessage's limits.
func encodeRaw(cidLen, n int) []byte {
	b := append([]byte(Magic), Version, byte(cidLen))
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = binary.BigEndian.AppendUint64(b, 1)
	b = append(b, make([]byte, n*cidLen+MACLen)...)
	return b
}
