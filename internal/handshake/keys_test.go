package handshake

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

func checkHex(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if w := unhex(want); !bytes.Equal(got, w) {
		t.Errorf("%s = %x, want %x", what, got, w)
	}
}

// RFC 9001 A.1 and RFC 9369 A.1.
func TestInitialKeysRFC(t *testing.T) {
	for _, vec := range rfcVectors {
		t.Run(vec.version.String(), func(t *testing.T) {
			vp, err := paramsFor(vec.version)
			if err != nil {
				t.Fatal(err)
			}
			initial, err := hkdf.Extract(sha256.New, unhex(rfcDCID), vp.salt)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "initial_secret", initial, vec.initialSecret)

			client, server, err := InitialSecrets(unhex(rfcDCID), vec.version)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "client_initial_secret", client, vec.clientSecret)
			checkHex(t, "server_initial_secret", server, vec.serverSecret)

			ck, err := DerivePacketKeys(tls.TLS_AES_128_GCM_SHA256, client, vec.version)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "client key", ck.Key, vec.clientKey)
			checkHex(t, "client iv", ck.IV, vec.clientIV)
			checkHex(t, "client hp", ck.HP, vec.clientHP)
			sk, err := DerivePacketKeys(tls.TLS_AES_128_GCM_SHA256, server, vec.version)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "server key", sk.Key, vec.serverKey)
			checkHex(t, "server iv", sk.IV, vec.serverIV)
			checkHex(t, "server hp", sk.HP, vec.serverHP)
		})
	}
}

// The HkdfLabel encodings the RFCs print for the version-specific labels.
func TestLabelsRFC(t *testing.T) {
	cases := []struct {
		length int
		label  string
		want   string
	}{
		{16, v1Params.keyLabel, "00100e746c7331332071756963206b657900"},
		{12, v1Params.ivLabel, "000c0d746c733133207175696320697600"},
		{16, v1Params.hpLabel, "00100d746c733133207175696320687000"},
		{16, v2Params.keyLabel, "001010746c73313320717569637632206b657900"},
		{12, v2Params.ivLabel, "000c0f746c7331332071756963763220697600"},
		{16, v2Params.hpLabel, "00100f746c7331332071756963763220687000"},
	}
	for _, c := range cases {
		checkHex(t, c.label, tlskdf.HkdfLabel(c.length, c.label, nil), c.want)
	}
}

// RFC 9001 A.5 and RFC 9369 A.5 key schedule, including "quic ku".
func TestChaChaKeysRFC(t *testing.T) {
	for _, vec := range rfcVectors {
		t.Run(vec.version.String(), func(t *testing.T) {
			k, err := DerivePacketKeys(tls.TLS_CHACHA20_POLY1305_SHA256, unhex(chachaSecret), vec.version)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "key", k.Key, vec.chachaKey)
			checkHex(t, "iv", k.IV, vec.chachaIV)
			checkHex(t, "hp", k.HP, vec.chachaHP)
			ku, err := NextSecret(tls.TLS_CHACHA20_POLY1305_SHA256, unhex(chachaSecret), vec.version)
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "ku", ku, vec.chachaKU)
		})
	}
}

func TestKeySetupErrors(t *testing.T) {
	secret32 := make([]byte, 32)
	if _, err := NewSealer(tls.TLS_AES_128_GCM_SHA256, secret32, Version(0xff00001d)); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("unknown version: err = %v", err)
	}
	if _, err := NewOpener(0x1304, secret32, Version1); !errors.Is(err, ErrUnsupportedCipherSuite) {
		t.Errorf("AES-128-CCM: err = %v", err)
	}
	if _, err := NewSealer(tls.TLS_AES_256_GCM_SHA384, secret32, Version1); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("32-byte secret for SHA-384 suite: err = %v", err)
	}
	if _, err := NextSecret(tls.TLS_AES_128_GCM_SHA256, nil, Version2); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("empty secret: err = %v", err)
	}
	if _, _, err := InitialSecrets(make([]byte, 21), Version1); !errors.Is(err, ErrConnectionIDTooLong) {
		t.Errorf("21-byte DCID: err = %v", err)
	}
	if _, _, err := NewInitialKeys(unhex(rfcDCID), 0, true); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("version 0: err = %v", err)
	}
	if !Version1.IsSupported() || !Version2.IsSupported() || Version(2).IsSupported() {
		t.Error("Supported() wrong")
	}
}

func TestAEADLimits(t *testing.T) {
	cases := []struct {
		suite      uint16
		conf, intg uint64
	}{
		{tls.TLS_AES_128_GCM_SHA256, 1 << 23, 1 << 52},
		{tls.TLS_AES_256_GCM_SHA384, 1 << 23, 1 << 52},
		{tls.TLS_CHACHA20_POLY1305_SHA256, 1 << 62, 1 << 36},
	}
	for _, c := range cases {
		conf, intg, err := AEADLimits(c.suite)
		if err != nil || conf != c.conf || intg != c.intg {
			t.Errorf("AEADLimits(%#x) = %d, %d, %v; want %d, %d", c.suite, conf, intg, err, c.conf, c.intg)
		}
		secret := testSecret(c.suite, 1)
		s, err := NewSealer(c.suite, secret, Version1)
		if err != nil {
			t.Fatal(err)
		}
		o, err := NewOpener(c.suite, secret, Version1)
		if err != nil {
			t.Fatal(err)
		}
		if s.ConfidentialityLimit() != c.conf || o.IntegrityLimit() != c.intg {
			t.Errorf("suite %#x: sealer/opener limits %d, %d", c.suite, s.ConfidentialityLimit(), o.IntegrityLimit())
		}
	}
	if _, _, err := AEADLimits(0x1305); !errors.Is(err, ErrUnsupportedCipherSuite) {
		t.Errorf("AEADLimits(CCM_8) err = %v", err)
	}
}

// testSecret returns a secret of the suite's hash length filled with seed.
func testSecret(suite uint16, seed byte) []byte {
	n := 32
	if suite == tls.TLS_AES_256_GCM_SHA384 {
		n = 48
	}
	return bytes.Repeat([]byte{seed}, n)
}
