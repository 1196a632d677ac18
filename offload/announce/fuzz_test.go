package announce

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary datagrams to the parser and to the Listener's
// checks (fake clock at t0, testKey, 8-byte IDs). Nothing may panic; a
// parsed message must describe exactly the input; an accepted one must
// carry a correct MAC and a fresh timestamp and insert exactly its IDs;
// a rejected one inserts nothing.
func FuzzParse(f *testing.F) {
	f.Add(encode(testKey, 8, t0, cids(3, 8)))
	f.Add(encode(testKey, 8, t0, cids(MaxCIDsPerMessage(8), 8)))
	f.Add(encode(testKey, 1, t0, cids(5, 1)))
	f.Add(encode(testKey, 20, t0.Add(-time.Minute), cids(2, 20)))
	f.Add(encode(otherKey, 8, t0, cids(1, 8)))
	f.Add([]byte("TRCA\x01\x08\x00\x00"))
	f.Add([]byte{})

	var got []byte
	l, err := NewListener(ListenerConfig{Conn: nopConn{}, Key: testKey, CIDLen: 8, MaxAge: 30 * time.Second,
		Insert: func(cid []byte) { got = append(got, cid...) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		m, pr := parseMessage(b)
		if pr == ReasonNone {
			if m.cidLen < 1 || m.cidLen > MaxCIDLen || m.count < 1 || len(m.cids) != m.count*m.cidLen ||
				len(b) > MaxMessageSize || len(m.mac) != MACLen ||
				!bytes.Equal(append(bytes.Clone(m.body), m.mac...), b) || !bytes.Equal(b[HeaderLen:len(b)-MACLen], m.cids) {
				t.Fatalf("inconsistent parse %+v of %x", m, b)
			}
		}

		got = got[:0]
		var r Reason
		atT0(t, func(*testing.T) { r = l.handle(b) }) // the seeds are fresh at t0
		if !bytes.Equal(b, orig) {
			t.Fatal("input modified")
		}
		if pr != ReasonNone && r != pr {
			t.Fatalf("listener reason %v, parser %v", r, pr)
		}
		if r != ReasonNone {
			if len(got) != 0 {
				t.Fatalf("rejected (%v) but inserted %x", r, got)
			}
			return
		}
		h := hmac.New(sha256.New, testKey[:])
		h.Write(m.body)
		if !bytes.Equal(h.Sum(nil)[:MACLen], m.mac) || m.cidLen != 8 {
			t.Fatalf("accepted a message with a wrong MAC or length: %x", b)
		}
		if d := time.Duration(int64(m.timestamp)-t0.UnixMilli()) * time.Millisecond; d > 30*time.Second || d < -30*time.Second {
			t.Fatalf("accepted a timestamp %v away", d)
		}
		if !bytes.Equal(got, m.cids) {
			t.Fatalf("inserted %x, want %x", got, m.cids)
		}
	})
}
