package handshake

import (
	"crypto/tls"
	"testing"
)

// The per-packet paths allocate nothing (a count, not a timing).
func TestZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts in -short mode are not needed")
	}
	check := func(name string, f func()) {
		t.Helper()
		f() // warm up lazily built state (Retry AEADs, pools)
		if n := testing.AllocsPerRun(50, f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, n)
		}
	}
	sealer, opener, p := newInitialBench(t)
	check("seal Initial", func() { p.seal(t, sealer) })
	check("open Initial", func() { p.open(t, opener) })
	for _, s := range shortSuites {
		sealer, opener, p := newShortBench(t, s.id)
		check("seal short "+s.name, func() { p.seal(t, sealer) })
		check("open short "+s.name, func() { p.open(t, opener) })
		forged := append([]byte(nil), p.protected...)
		forged[20] ^= 1
		check("open forged "+s.name, func() {
			copy(p.work, forged)
			if _, _, err := opener.UnprotectPacket(p.work, p.pnOffset, 0); err == nil {
				t.Fatal("forged packet opened")
			}
		})
	}
	client, server := appKeyPair(t, tls.TLS_CHACHA20_POLY1305_SHA256, Version2)
	pkt := shortPacket(1, make([]byte, 1000))
	work := make([]byte, 0, len(pkt)+16)
	var sealed []byte
	check("AppKeys protect", func() {
		var err error
		if sealed, err = client.ProtectPacket(append(work[:0], pkt...), 9, 2, 1); err != nil {
			t.Fatal(err)
		}
	})
	recv := make([]byte, len(sealed))
	check("AppKeys unprotect", func() {
		copy(recv, sealed)
		if _, _, _, err := server.UnprotectPacket(recv, 9, 0); err != nil {
			t.Fatal(err)
		}
	})
	retry := unhex(rfc9369.retry)
	odcid := unhex(rfcDCID)
	buf := make([]byte, 0, len(retry))
	check("Retry tag", func() {
		if _, err := AppendRetryIntegrityTag(append(buf[:0], retry[:len(retry)-16]...), Version2, odcid); err != nil {
			t.Fatal(err)
		}
	})
	check("Retry verify", func() {
		if err := VerifyRetryIntegrityTag(retry, Version2, odcid); err != nil {
			t.Fatal(err)
		}
	})
}
