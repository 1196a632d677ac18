package handshake

import (
	"bytes"
	"crypto/tls"
	"testing"
)

// RFC 9001 A.2 and RFC 9369 A.2: the client Initial, byte for byte, then
// opened back by the server.
func TestClientInitialRFC(t *testing.T) {
	for _, vec := range rfcVectors {
		t.Run(vec.version.String(), func(t *testing.T) {
			sealer, _, err := NewInitialKeys(unhex(rfcDCID), vec.version, true)
			if err != nil {
				t.Fatal(err)
			}
			plain := clientPlaintext()
			packet := append(unhex(vec.clientHeader), plain...)
			packet, err = sealer.ProtectPacket(packet, 18, 4, 2)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "protected client Initial", packet, vec.clientProtected)

			_, opener, err := NewInitialKeys(unhex(rfcDCID), vec.version, false)
			if err != nil {
				t.Fatal(err)
			}
			payload, pn, err := opener.UnprotectPacket(packet, 18, -1)
			if err != nil {
				t.Fatal(err)
			}
			if pn != 2 || !bytes.Equal(payload, plain) {
				t.Errorf("opened pn %d payload %x..., want pn 2 and the CRYPTO frame", pn, payload[:min(16, len(payload))])
			}
			checkHex(t, "unprotected header", packet[:22], vec.clientHeader)
		})
	}
}

// RFC 9001 A.3 and RFC 9369 A.3: the server Initial (2-byte packet
// number), byte for byte, then opened back by the client.
func TestServerInitialRFC(t *testing.T) {
	for _, vec := range rfcVectors {
		t.Run(vec.version.String(), func(t *testing.T) {
			sealer, _, err := NewInitialKeys(unhex(rfcDCID), vec.version, false)
			if err != nil {
				t.Fatal(err)
			}
			plain := unhex(rfcServerPayload)
			packet := append(unhex(vec.serverHeader), plain...)
			packet, err = sealer.ProtectPacket(packet, 18, 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "protected server Initial", packet, vec.serverProtected)

			_, opener, err := NewInitialKeys(unhex(rfcDCID), vec.version, true)
			if err != nil {
				t.Fatal(err)
			}
			pnLen, truncated, err := opener.UnprotectHeader(packet, 18)
			if err != nil || pnLen != 2 || truncated != 1 {
				t.Fatalf("UnprotectHeader = %d, %d, %v; want 2, 1", pnLen, truncated, err)
			}
			checkHex(t, "unprotected header", packet[:20], vec.serverHeader)
			payload, err := opener.Open(nil, packet[20:], 1, packet[:20])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(payload, plain) {
				t.Errorf("payload = %x, want %x", payload, plain)
			}
		})
	}
}

// RFC 9001 A.5 and RFC 9369 A.5: a ChaCha20-Poly1305 short header packet.
func TestChaChaShortHeaderRFC(t *testing.T) {
	for _, vec := range rfcVectors {
		t.Run(vec.version.String(), func(t *testing.T) {
			sealer, err := NewSealer(tls.TLS_CHACHA20_POLY1305_SHA256, unhex(chachaSecret), vec.version)
			if err != nil {
				t.Fatal(err)
			}
			sealer.makeNonce(chachaPN)
			checkHex(t, "nonce", sealer.nonce[:], vec.chachaNonce)

			packet := append(unhex(chachaHeader), 0x01)
			packet, err = sealer.ProtectPacket(packet, 1, 3, chachaPN)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "protected packet", packet, vec.chachaProtected)

			opener, err := NewOpener(tls.TLS_CHACHA20_POLY1305_SHA256, unhex(chachaSecret), vec.version)
			if err != nil {
				t.Fatal(err)
			}
			payload, pn, err := opener.UnprotectPacket(packet, 1, chachaPN-1000)
			if err != nil {
				t.Fatal(err)
			}
			if pn != chachaPN || !bytes.Equal(payload, []byte{0x01}) {
				t.Errorf("opened pn %d payload %x, want %d and 01", pn, payload, chachaPN)
			}
			checkHex(t, "unprotected header", packet[:4], chachaHeader)
		})
	}
}

// Seal plus ApplyHeaderProtection gives the same bytes as ProtectPacket,
// and Seal into a separate buffer leaves the plaintext alone.
func TestSealThenHeaderProtection(t *testing.T) {
	sealer, _, err := NewInitialKeys(unhex(rfcDCID), Version1, true)
	if err != nil {
		t.Fatal(err)
	}
	hdr := unhex(rfc9001.clientHeader)
	plain := clientPlaintext()
	packet := sealer.Seal(append([]byte(nil), hdr...), plain, 2, hdr)
	if err := sealer.ApplyHeaderProtection(packet, 18, 4); err != nil {
		t.Fatal(err)
	}
	checkHex(t, "protected client Initial", packet, rfc9001.clientProtected)
	if !bytes.Equal(plain, clientPlaintext()) {
		t.Error("Seal modified its plaintext")
	}
	if sealer.SealedPackets() != 1 || sealer.Overhead() != 16 {
		t.Errorf("SealedPackets = %d, Overhead = %d", sealer.SealedPackets(), sealer.Overhead())
	}
}

// Every suite round-trips long and short header packets of every packet
// number length, in place, and opens nothing sealed with another suite.
func TestRoundTripAllSuites(t *testing.T) {
	suites := []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}
	for _, v := range []Version{Version1, Version2} {
		for _, suite := range suites {
			sealer, err := NewSealer(suite, testSecret(suite, 7), v)
			if err != nil {
				t.Fatal(err)
			}
			opener, err := NewOpener(suite, testSecret(suite, 7), v)
			if err != nil {
				t.Fatal(err)
			}
			for pnLen := 1; pnLen <= 4; pnLen++ {
				for _, long := range []bool{false, true} {
					pn := uint64(0x12345678) & (1<<(8*pnLen) - 1)
					first := byte(0x40) | byte(pnLen-1)
					pnOffset := 9 // short header, 8-byte DCID
					if long {
						first |= 0xc0
						pnOffset = 18
					}
					hdr := make([]byte, pnOffset+pnLen)
					hdr[0] = first
					for i := range pnLen {
						hdr[pnOffset+i] = byte(pn >> (8 * (pnLen - 1 - i)))
					}
					plain := bytes.Repeat([]byte{0xab}, 50)
					packet := append(append(make([]byte, 0, 200), hdr...), plain...)
					packet, err := sealer.ProtectPacket(packet, pnOffset, pnLen, pn)
					if err != nil {
						t.Fatal(err)
					}
					unchanged := byte(0xe0)
					if long {
						unchanged = 0xf0
					}
					if packet[0]&unchanged != first&unchanged {
						t.Errorf("header protection changed unmasked bits: %#x vs %#x", packet[0], first)
					}
					payload, got, err := opener.UnprotectPacket(packet, pnOffset, int64(pn)-1)
					if err != nil || got != pn || !bytes.Equal(payload, plain) || !bytes.Equal(packet[:len(hdr)], hdr) {
						t.Errorf("v=%v suite=%#x pnLen=%d long=%v: pn %d err %v", v, suite, pnLen, long, got, err)
					}
				}
			}
		}
	}
}
