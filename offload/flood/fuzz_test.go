package flood

import (
	"bytes"
	"testing"
)

// FuzzOpenInitial checks that opening arbitrary datagrams never panics and
// that only genuine Initials carrying CRYPTO data are accepted.
func FuzzOpenInitial(f *testing.F) {
	pkt, err := AppendInitial(nil, Version1, bytes.Repeat([]byte{7}, 8), []byte{1, 2}, []byte{1, 0, 0, 2, 3, 3})
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
