package token

import (
	"bytes"
	"net/netip"
	"testing"
)

// FuzzParsePayload: no panic, and what parses re-encodes to the same bytes
// (the encoding is canonical).
func FuzzParsePayload(f *testing.F) {
	retry, _ := appendPayload(nil, TypeRetry, vecClientRetry, vecODCID, vecRSCID)
	f.Add(retry, uint8(TypeRetry))
	f.Add(append([]byte{16}, vecClientNew.AsSlice()...), uint8(TypeNewToken))
	f.Add([]byte{4, 1, 2, 3, 4, 0, 80, 0, 0}, uint8(TypeRetry))
	f.Add([]byte{}, uint8(TypeNewToken))
	f.Fuzz(func(t *testing.T, p []byte, typ uint8) {
		tt := Type(typ%2 + 1)
		pl, ok := parsePayload(p, tt)
		if !ok {
			return
		}
		again, err := appendPayload(nil, tt, netip.AddrPortFrom(pl.addr, pl.port), pl.odcid, pl.rscid)
		if err != nil || !bytes.Equal(again, p) {
			t.Fatalf("parsed %x, re-encoded %x (%v)", p, again, err)
		}
	})
}

// FuzzParseSecret: no panic; accepted input is 32 raw bytes or 64 hex
// digits plus an optional newline, and decodes to 32 bytes.
func FuzzParseSecret(f *testing.F) {
	f.Add([]byte(FormatSecret(vecRoot())))
	f.Add(vecRoot())
	f.Add([]byte("00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSecret(data)
		if err != nil {
			return
		}
		if len(s) != SecretLen {
			t.Fatalf("secret of %d bytes", len(s))
		}
		if len(data) != SecretLen && !bytes.HasPrefix(bytes.ToLower(data), []byte(FormatSecret(s)[:64])) {
			t.Fatalf("%q decoded to %x", data, s)
		}
	})
}
