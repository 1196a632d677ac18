package announce

import (
	"testing"
	"time"
)

// BenchmarkParseVerify is the Listener's per-message work on a full
// message of 8-byte IDs: framing checks, HMAC, freshness, and 146 calls to
// an empty Insert.
func BenchmarkParseVerify(b *testing.B) {
	// Fresh for an hour: however long the benchmark runs.
	msg := encode(testKey, 8, time.Now(), cids(MaxCIDsPerMessage(8), 8))
	l, err := NewListener(ListenerConfig{Conn: nopConn{}, Key: testKey, CIDLen: 8, MaxAge: time.Hour, Insert: func([]byte) {}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if r := l.handle(msg); r != ReasonNone {
			b.Fatal(r)
		}
	}
}

// BenchmarkRejectBadMAC is the cost of a forged full-size datagram.
func BenchmarkRejectBadMAC(b *testing.B) {
	msg := encode(otherKey, 8, time.Now(), cids(MaxCIDsPerMessage(8), 8))
	l, err := NewListener(ListenerConfig{Conn: nopConn{}, Key: testKey, CIDLen: 8, Insert: func([]byte) {}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := l.handle(msg); r != ReasonMAC {
			b.Fatal(r)
		}
	}
}

// BenchmarkEncode is the Announcer's per-message work for a full message.
func BenchmarkEncode(b *testing.B) {
	ids := flat(cids(MaxCIDsPerMessage(8), 8))
	var m macState
	buf := make([]byte, 0, MaxMessageSize)
	ts := uint64(time.Now().UnixMilli())
	b.ReportAllocs()
	for b.Loop() {
		buf = appendMessage(buf[:0], &m, &testKey, 8, ts, ids)
	}
}
