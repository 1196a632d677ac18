package flood

import (
	"bytes"
	"testing"

	"github.com/turboretry/turboretry/internal/handshake"
)

// FuzzParseFrame checks that ParseFrame never panics, and that whatever it
// accepts rebuilds into the same IPv4/UDP content via AppendFrame.
func FuzzParseFrame(f *testing.F) {
	h := testHeader()
	good, _ := AppendFrame(nil, &h, []byte("seed payload"))
	f.Add(good)
	f.Add(good[:EthHeaderLen+IPv4HeaderLen])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h FrameHeader
		p, err := ParseFrame(b, &h)
		if err != nil {
			return
		}
		if !h.Src.Addr().Is4() || !h.Dst.Addr().Is4() {
			t.Fatal("parsed a non-IPv4 address")
		}
		again, err := AppendFrame(nil, &h, p)
		if err != nil {
			t.Fatalf("re-building an accepted frame: %v", err)
		}
		if h.TTL == 0 {
			h.TTL = defaultTTL // AppendFrame's default for a zero TTL
		}
		var h2 FrameHeader
		p2, err := ParseFrame(again, &h2)
		if err != nil || h2 != h || !bytes.Equal(p, p2) {
			t.Fatalf("round trip: %v %+v %+v", err, h, h2)
		}
	})
}

// FuzzOpenInitial checks that opening arbitrary datagrams never panics and
// that only genuine Initials carrying CRYPTO data are accepted.
func FuzzOpenInitial(f *testing.F) {
	pkt, err := AppendInitial(nil, handshake.Version1, bytes.Repeat([]byte{7}, 8), []byte{1, 2}, []byte{1, 0, 0, 2, 3, 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pkt)
	f.Add(pkt[:40])
	f.Add([]byte{0xc0, 0, 0, 0, 1, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := append([]byte(nil), b...)
		o, err := OpenInitial(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("input modified")
		}
		if err == nil && (len(o.Crypto) == 0 || len(o.DCID) < MinDCIDLen) {
			t.Fatalf("accepted %+v", o)
		}
	})
}
