package handshake

import (
	"crypto/tls"
	"testing"
)

// benchPacket holds a plaintext packet and a protected copy to measure
// sealing and opening of the same bytes.
type benchPacket struct {
	plain     []byte // header || payload
	protected []byte
	pnOffset  int
	pnLen     int
	pn        uint64
	work      []byte
}

func newInitialBench(tb testing.TB) (*Sealer, *Opener, *benchPacket) {
	sealer, _, err := NewInitialKeys(unhex(rfcDCID), Version1, true)
	if err != nil {
		tb.Fatal(err)
	}
	opener := serverInitialOpener(tb)
	// 1200-byte datagram: 22-byte header, 1162-byte payload, 16-byte tag.
	plain := append(unhex(rfc9001.clientHeader), clientPlaintext()...)
	return sealer, opener, newBenchPacket(tb, sealer, plain, 18, 4, 2)
}

func newShortBench(tb testing.TB, suite uint16) (*Sealer, *Opener, *benchPacket) {
	sealer, err := NewSealer(suite, testSecret(suite, 9), Version1)
	if err != nil {
		tb.Fatal(err)
	}
	opener, err := NewOpener(suite, testSecret(suite, 9), Version1)
	if err != nil {
		tb.Fatal(err)
	}
	// 1350-byte datagram: 1 + 8-byte DCID + 2-byte pn, payload, 16-byte tag.
	plain := shortPacket(0x1234, make([]byte, 1350-1-testDCIDLen-2-16))
	return sealer, opener, newBenchPacket(tb, sealer, plain, 1+testDCIDLen, 2, 0x1234)
}

func newBenchPacket(tb testing.TB, sealer *Sealer, plain []byte, pnOffset, pnLen int, pn uint64) *benchPacket {
	protected, err := sealer.ProtectPacket(append(make([]byte, 0, len(plain)+16), plain...), pnOffset, pnLen, pn)
	if err != nil {
		tb.Fatal(err)
	}
	return &benchPacket{plain: plain, protected: protected, pnOffset: pnOffset, pnLen: pnLen, pn: pn,
		work: make([]byte, len(protected))}
}

func (p *benchPacket) seal(tb testing.TB, s *Sealer) {
	w := p.work[:len(p.plain)]
	copy(w, p.plain)
	if _, err := s.ProtectPacket(w, p.pnOffset, p.pnLen, p.pn); err != nil {
		tb.Fatal(err)
	}
}

func (p *benchPacket) open(tb testing.TB, o *Opener) {
	copy(p.work, p.protected)
	if _, _, err := o.UnprotectPacket(p.work, p.pnOffset, int64(p.pn)-1); err != nil {
		tb.Fatal(err)
	}
}

var shortSuites = []struct {
	name string
	id   uint16
}{
	{"AES128GCM", tls.TLS_AES_128_GCM_SHA256},
	{"AES256GCM", tls.TLS_AES_256_GCM_SHA384},
	{"ChaCha20Poly1305", tls.TLS_CHACHA20_POLY1305_SHA256},
}

func BenchmarkSealInitial1200(b *testing.B) {
	sealer, _, p := newInitialBench(b)
	b.SetBytes(int64(len(p.protected)))
	b.ReportAllocs()
	for b.Loop() {
		p.seal(b, sealer)
	}
}

func BenchmarkOpenInitial1200(b *testing.B) {
	_, opener, p := newInitialBench(b)
	b.SetBytes(int64(len(p.protected)))
	b.ReportAllocs()
	for b.Loop() {
		p.open(b, opener)
	}
}

func BenchmarkSealShort1350(b *testing.B) {
	for _, s := range shortSuites {
		b.Run(s.name, func(b *testing.B) {
			sealer, _, p := newShortBench(b, s.id)
			b.SetBytes(int64(len(p.protected)))
			b.ReportAllocs()
			for b.Loop() {
				p.seal(b, sealer)
			}
		})
	}
}

func BenchmarkOpenShort1350(b *testing.B) {
	for _, s := range shortSuites {
		b.Run(s.name, func(b *testing.B) {
			_, opener, p := newShortBench(b, s.id)
			b.SetBytes(int64(len(p.protected)))
			b.ReportAllocs()
			for b.Loop() {
				p.open(b, opener)
			}
		})
	}
}

// Decryption failure is what an attacker triggers at will: it must stay
// cheap and allocation free.
func BenchmarkOpenForged1350(b *testing.B) {
	_, opener, p := newShortBench(b, tls.TLS_AES_128_GCM_SHA256)
	p.protected[len(p.protected)-1] ^= 1
	b.ReportAllocs()
	for b.Loop() {
		copy(p.work, p.protected)
		if _, _, err := opener.UnprotectPacket(p.work, p.pnOffset, int64(p.pn)-1); err == nil {
			b.Fatal("forged packet opened")
		}
	}
}

func BenchmarkRetryTag(b *testing.B) {
	retry := unhex(rfc9001.retry)
	body := retry[:len(retry)-RetryIntegrityTagLen]
	buf := make([]byte, 0, len(retry))
	odcid := unhex(rfcDCID)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AppendRetryIntegrityTag(append(buf[:0], body...), Version1, odcid); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRetryVerify(b *testing.B) {
	retry := unhex(rfc9001.retry)
	odcid := unhex(rfcDCID)
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyRetryIntegrityTag(retry, Version1, odcid); err != nil {
			b.Fatal(err)
		}
	}
}
