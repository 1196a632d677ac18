package tlskdf

import (
	"crypto/sha256"
	"testing"
)

// The three packet keys (key, IV, header protection) of one QUIC secret.
var quicLabels = []struct {
	label string
	n     int
}{{"quic key", 16}, {"quic iv", 12}, {"quic hp", 16}}

func BenchmarkPacketKeysCryptoHKDF(b *testing.B) {
	secret := make([]byte, sha256.Size)
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range quicLabels {
			ExpandLabel(sha256.New, secret, l.label, nil, l.n)
		}
	}
}

func BenchmarkPacketKeysExpanderSHA256(b *testing.B) {
	secret := make([]byte, sha256.Size)
	var out [16]byte
	b.ReportAllocs()
	for b.Loop() {
		var e ExpanderSHA256
		if err := e.Init(secret); err != nil {
			b.Fatal(err)
		}
		for _, l := range quicLabels {
			if err := e.ExpandLabel(out[:l.n], l.label, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}
