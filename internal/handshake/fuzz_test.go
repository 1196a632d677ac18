package handshake

import (
	"bytes"
	"crypto/tls"
	"errors"
	"testing"
)

// fuzzReceiver is one set of receive keys the fuzzer tries, with the
// matching send keys to re-protect whatever opens.
type fuzzReceiver struct {
	name   string
	opener *Opener
	sealer *Sealer
}

func fuzzReceivers(t testing.TB) []fuzzReceiver {
	var rs []fuzzReceiver
	for _, v := range []Version{Version1, Version2} {
		clientSealer, _, err := NewInitialKeys(unhex(rfcDCID), v, true)
		if err != nil {
			t.Fatal(err)
		}
		_, serverOpener, err := NewInitialKeys(unhex(rfcDCID), v, false)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, fuzzReceiver{"Initial " + v.String(), serverOpener, clientSealer})
		s, err := NewSealer(tls.TLS_CHACHA20_POLY1305_SHA256, unhex(chachaSecret), v)
		if err != nil {
			t.Fatal(err)
		}
		o, err := NewOpener(tls.TLS_CHACHA20_POLY1305_SHA256, unhex(chachaSecret), v)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, fuzzReceiver{"ChaCha20 " + v.String(), o, s})
	}
	return rs
}

// FuzzUnprotect feeds arbitrary bytes, packet number offsets and largest
// received packet numbers to the receive path (UnprotectHeader, Open, and
// AppKeys key selection). It must never panic, must fail only with the
// package's sentinel errors, and whatever opens must protect back to the
// same bytes.
func FuzzUnprotect(f *testing.F) {
	f.Add(unhex(rfc9001.clientProtected), 18, int64(-1))
	f.Add(unhex(rfc9369.clientProtected), 18, int64(1))
	f.Add(unhex(rfc9001.chachaProtected), 1, int64(chachaPN-1))
	f.Add(unhex(rfc9369.chachaProtected), 1, int64(chachaPN+100))
	f.Add(unhex(rfc9001.serverProtected), 18, int64(0))
	f.Add([]byte{0x40}, 1, int64(0))
	f.Add([]byte{}, 0, int64(-1))
	f.Add(make([]byte, 40), -5, int64(-7))
	f.Add(bytes.Repeat([]byte{0xff}, 64), 63, int64(1)<<62)

	receivers := fuzzReceivers(f)
	f.Fuzz(func(t *testing.T, data []byte, pnOffset int, largest int64) {
		work := make([]byte, len(data))
		for _, r := range receivers {
			copy(work, data)
			payload, pn, err := r.opener.UnprotectPacket(work, pnOffset, largest)
			if err != nil {
				if !isSentinel(err) {
					t.Fatalf("%s: unexpected error %v", r.name, err)
				}
				continue
			}
			// Re-protect what opened; it must give back the input.
			hdrLen := len(work) - len(payload) - r.opener.Overhead()
			reprotected, err := r.sealer.ProtectPacket(append([]byte(nil), work[:len(work)-r.opener.Overhead()]...), pnOffset, hdrLen-pnOffset, pn)
			if err != nil {
				t.Fatalf("%s: re-protect: %v", r.name, err)
			}
			if !bytes.Equal(reprotected, data) {
				t.Fatalf("%s: re-protected packet differs from input", r.name)
			}
		}
		// 1-RTT key selection on fresh keys (so runs are deterministic).
		_, server := appKeyPair(t, tls.TLS_AES_128_GCM_SHA256, Version1)
		for _, largest := range []int64{-1, largest} {
			copy(work, data)
			if _, _, _, err := server.UnprotectPacket(work, pnOffset, largest); err != nil && !isSentinel(err) {
				t.Fatalf("AppKeys: unexpected error %v", err)
			}
		}
	})
}

func isSentinel(err error) bool {
	for _, s := range []error{ErrDecryptionFailed, ErrPacketTooShort, ErrInvalidPacketNumberOffset, ErrKeysDiscarded, ErrKeyUpdateTooSoon} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
