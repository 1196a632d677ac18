package token

import (
	"net/netip"
	"testing"
	"time"
)

// Run: go test -run='^$' -bench=. -benchmem ./token/

func BenchmarkIssueAmortized(b *testing.B) {
	kr := vecRing(b)
	is := newTestIssuer(b, kr, SourceAgent)
	dst := make([]byte, 0, MaxTokenLen)
	b.ReportAllocs()
	for b.Loop() {
		// The real clock, so TIDs roll every second as in production.
		if _, err := is.AppendRetry(dst, vecClientRetry, vecODCID, vecRSCID, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIssueAmortizedParallel(b *testing.B) {
	kr := vecRing(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		is := newTestIssuer(b, kr, SourceAgent)
		dst := make([]byte, 0, MaxTokenLen)
		for pb.Next() {
			if _, err := is.AppendRetry(dst, vecClientRetry, vecODCID, vecRSCID, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkValidateCached(b *testing.B) {
	kr := vecRing(b)
	v := newTestValidator(b, kr, ValidatorConfig{})
	tok := mustHex(vecRetryTok)
	buf := make([]byte, MaxPayloadLen)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(tok, TypeRetry, vecClientRetry, vecNow, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// distinctTokens mints n retry tokens under n different TIDs.
func distinctTokens(b *testing.B, kr *KeyRing, n int) [][]byte {
	toks := make([][]byte, n)
	for i := range toks {
		p := vecRetryParams()
		p.TR = [4]byte{byte(i >> 8), byte(i), 0x5a, 0xa5}
		var err error
		if toks[i], err = kr.Mint(nil, p); err != nil {
			b.Fatal(err)
		}
	}
	return toks
}

// Validators on every core share one KeyCache; tokens come from 64 TIDs, so
// the shard locks are spread as they would be under real traffic.
func BenchmarkValidateCachedParallel(b *testing.B) {
	kr := vecRing(b)
	cache := NewKeyCache(0)
	toks := distinctTokens(b, kr, 64)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		v := newTestValidator(b, kr, ValidatorConfig{Cache: cache})
		buf := make([]byte, MaxPayloadLen)
		i := 0
		for pb.Next() {
			if _, err := v.Validate(toks[i&63], TypeRetry, vecClientRetry, vecNow, buf); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// Every validation misses: 1024 TIDs cycle through a 64-entry cache.
func BenchmarkValidateUncached(b *testing.B) {
	kr := vecRing(b)
	v := newTestValidator(b, kr, ValidatorConfig{Cache: NewKeyCache(1)})
	toks := distinctTokens(b, kr, 1024)
	buf := make([]byte, MaxPayloadLen)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := v.Validate(toks[i&1023], TypeRetry, vecClientRetry, vecNow, buf); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if v.Counts()[ReasonNone] == 0 {
		b.Fatal("nothing validated")
	}
}

func BenchmarkRejectForgedTID(b *testing.B) {
	kr := vecRing(b)
	v := newTestValidator(b, kr, ValidatorConfig{})
	forged := flip(mustHex(vecRetryTok), 8*8+7)
	buf := make([]byte, MaxPayloadLen)
	from := netip.MustParseAddrPort("198.18.0.1:1234")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(forged, TypeRetry, from, vecNow, buf); ReasonOf(err) != ReasonBadTIDMAC {
			b.Fatal(err)
		}
	}
}
