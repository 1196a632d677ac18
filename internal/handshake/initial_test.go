package handshake

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"testing"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

// refDirection is one direction's Initial keys derived the slow way, with
// crypto/hkdf, as the reference the allocation-free derivation must match.
type refDirection struct {
	aead cipher.AEAD
	iv   []byte
	hp   cipher.Block
}

func refInitial(t *testing.T, dcid []byte, vp *versionParams, label string) refDirection {
	t.Helper()
	initial, err := hkdf.Extract(sha256.New, dcid, vp.salt)
	if err != nil {
		t.Fatal(err)
	}
	secret := tlskdf.ExpandLabel(sha256.New, initial, label, nil, 32)
	key := tlskdf.ExpandLabel(sha256.New, secret, vp.keyLabel, nil, 16)
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := aes.NewCipher(tlskdf.ExpandLabel(sha256.New, secret, vp.hpLabel, nil, 16))
	if err != nil {
		t.Fatal(err)
	}
	return refDirection{aead: aead, iv: tlskdf.ExpandLabel(sha256.New, secret, vp.ivLabel, nil, 12), hp: hp}
}

// checkDirection compares the IV, an AEAD seal and a header protection
// mask of pc and hp with the reference.
func checkDirection(t *testing.T, what string, pc *packetCipher, hp *headerProtector, ref refDirection) {
	t.Helper()
	if !bytes.Equal(pc.iv[:], ref.iv) {
		t.Fatalf("%s: iv %x, want %x", what, pc.iv, ref.iv)
	}
	msg, ad := []byte("payload"), []byte("header")
	if got, want := pc.aead.Seal(nil, ref.iv, msg, ad), ref.aead.Seal(nil, ref.iv, msg, ad); !bytes.Equal(got, want) {
		t.Fatalf("%s: AEAD output %x, want %x", what, got, want)
	}
	sample := bytes.Repeat([]byte{0x5a}, sampleLen)
	var want [sampleLen]byte
	ref.hp.Encrypt(want[:], sample)
	hp.computeMask(sample)
	if hp.mask != want {
		t.Fatalf("%s: header protection mask %x, want %x", what, hp.mask, want)
	}
}

// NewInitialKeys, and NewInitialSealer's one direction, match a
// crypto/hkdf derivation for every connection ID length, both versions
// and both roles, beyond the single DCID of the RFC vectors.
func TestInitialKeysMatchHKDF(t *testing.T) {
	for _, v := range []Version{Version1, Version2} {
		vp, err := paramsFor(v)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n <= MaxConnectionIDLen; n++ {
			dcid := make([]byte, n)
			for i := range dcid {
				dcid[i] = byte(n*31 + i)
			}
			client := refInitial(t, dcid, vp, "client in")
			server := refInitial(t, dcid, vp, "server in")
			for _, isClient := range []bool{true, false} {
				sealer, opener, err := NewInitialKeys(dcid, v, isClient)
				if err != nil {
					t.Fatal(err)
				}
				send, recv := server, client
				if isClient {
					send, recv = client, server
				}
				checkDirection(t, "sealer", &sealer.packetCipher, sealer.hp, send)
				checkDirection(t, "opener", &opener.packetCipher, opener.hp, recv)
				only, err := NewInitialSealer(dcid, v, isClient)
				if err != nil {
					t.Fatal(err)
				}
				checkDirection(t, "NewInitialSealer", &only.packetCipher, only.hp, send)
			}
		}
	}
}

// NewInitialKeys allocates only what crypto/aes and crypto/cipher
// allocate (an AES key schedule for each direction's AEAD and header
// protection key, a GCM state per direction) and one struct for the rest.
// Deriving with crypto/hkdf took about 90 more.
func TestInitialKeysAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	if testing.Short() {
		t.Skip("allocation counts in -short mode are not needed")
	}
	dcid := unhex(rfcDCID)
	n := testing.AllocsPerRun(50, func() {
		if _, _, err := NewInitialKeys(dcid, Version2, false); err != nil {
			t.Fatal(err)
		}
	})
	const want = 4 + 2 + 1
	if n > want {
		t.Errorf("NewInitialKeys: %v allocs per run, want at most %d", n, want)
	}
	// One direction: half the AES and GCM state (a stateless close pays it
	// for every refused Initial).
	n = testing.AllocsPerRun(50, func() {
		if _, err := NewInitialSealer(dcid, Version1, false); err != nil {
			t.Fatal(err)
		}
	})
	if n > 2+1+1 {
		t.Errorf("NewInitialSealer: %v allocs per run, want at most 4", n)
	}
	secret := testSecret(suiteAES128.id, 3)
	n = testing.AllocsPerRun(50, func() {
		if _, err := NewSealer(suiteAES128.id, secret, Version1); err != nil {
			t.Fatal(err)
		}
	})
	// Two AES key schedules, a GCM state, the Sealer with its header
	// protector.
	if n > 4 {
		t.Errorf("NewSealer: %v allocs per run, want at most 4", n)
	}
}
