package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"testing"
	"time"
)

// docs/design.md "Universal token, version 1" test vectors.
const (
	vecEpoch    = 20000
	vecKpsk     = "59a18ef5c6e6674d0ee51c94d11a2cf9bfee08d81153086dd2e59e6c71d5e557"
	vecTID      = "deadbeef58850fc0"
	vecKenc     = "2c3ec4983b27c0b1a2ef762ac4dc9430"
	vecNbase    = "a701ae47aaac1bd7a2d5d133"
	vecRetryT   = 1764460800000
	vecNewT     = 1764460800123
	vecRetryTok = "90deadbeef58850fc00000019ad20f280000000007555b5376b44b7712868d12bed1d69b54962b32b5422756010f0f92c1b35ad2d9e84f49286f9b4c08ed"
	vecNewTok   = "60deadbeef58850fc00000019ad20f287b0000000898b3100be2f4cbb488e7b6530d508e9e943f4156620ad3a14db897c9a0ad6bb07d"
	// vecRotation puts both vector times into epoch 20000:
	// floor(1764460800 / 88220) = 20000.
	vecRotation = 88220 * time.Second
)

var (
	vecClientRetry = netip.MustParseAddrPort("192.0.2.10:54321")
	vecClientNew   = netip.MustParseAddr("2001:db8::1")
	vecODCID       = mustHex("8394c8f03e515708")
	vecRSCID       = mustHex("f067a5502a4262b5")
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func vecRoot() []byte {
	r := make([]byte, SecretLen)
	for i := range r {
		r[i] = byte(i)
	}
	return r
}

func vecRing(t testing.TB) *KeyRing {
	t.Helper()
	kr, err := NewKeyRing(vecRoot(), vecRotation)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func vecRetryParams() MintParams {
	return MintParams{Source: SourceAgent, Type: TypeRetry, TimeMs: vecRetryT, TR: [4]byte{0xde, 0xad, 0xbe, 0xef},
		R: 7, Client: vecClientRetry, ODCID: vecODCID, RSCID: vecRSCID}
}

func vecNewParams() MintParams {
	return MintParams{Source: SourceHost, Type: TypeNewToken, TimeMs: vecNewT, TR: [4]byte{0xde, 0xad, 0xbe, 0xef},
		R: 8, Client: netip.AddrPortFrom(vecClientNew, 0)}
}

func TestVectorKeySchedule(t *testing.T) {
	kr := vecRing(t)
	if e := kr.epochOfMs(vecRetryT); e != vecEpoch {
		t.Fatalf("epoch of T = %d, want %d", e, vecEpoch)
	}
	psk, err := kr.EpochKey(vecEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(psk); got != vecKpsk {
		t.Fatalf("K_psk = %s, want %s", got, vecKpsk)
	}
	ek, _ := kr.keys(vecEpoch)
	mac, _ := newTIDMAC()
	tm := mac.compute(ek, mustHex("deadbeef"))
	if got := "deadbeef" + hex.EncodeToString(tm[:]); got != vecTID {
		t.Fatalf("TID = %s, want %s", got, vecTID)
	}
	kEnc, nBase, err := deriveTokenSecrets(psk, mustHex(vecTID))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(kEnc); got != vecKenc {
		t.Fatalf("K_enc = %s, want %s", got, vecKenc)
	}
	if got := hex.EncodeToString(nBase); got != vecNbase {
		t.Fatalf("N_base = %s, want %s", got, vecNbase)
	}
}

// The precomputed-state HMAC must equal crypto/hmac for any TR.
func TestTIDMACMatchesHMAC(t *testing.T) {
	kr := vecRing(t)
	ek, _ := kr.keys(vecEpoch)
	psk, _ := kr.EpochKey(vecEpoch)
	ktid := expandForTest(psk)
	mac, _ := newTIDMAC()
	for i := range 1000 {
		tr := []byte{byte(i), byte(i >> 8), byte(i * 7), byte(i * 13)}
		m := hmac.New(sha256.New, ktid)
		m.Write(tr)
		want := m.Sum(nil)[:4]
		got := mac.compute(ek, tr)
		if !bytes.Equal(got[:], want) {
			t.Fatalf("TR %x: TM %x, want %x", tr, got, want)
		}
	}
}

func TestVectorTokens(t *testing.T) {
	kr := vecRing(t)
	for _, tc := range []struct {
		name string
		p    MintParams
		want string
	}{
		{"retry", vecRetryParams(), vecRetryTok},
		{"new_token", vecNewParams(), vecNewTok},
	} {
		got, err := kr.Mint(nil, tc.p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if hex.EncodeToString(got) != tc.want {
			t.Fatalf("%s token\n got %x\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestVectorValidation(t *testing.T) {
	kr := vecRing(t)
	v, err := kr.NewValidator(ValidatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, MaxPayloadLen)

	res, err := v.Validate(mustHex(vecRetryTok), TypeRetry, vecClientRetry, time.UnixMilli(vecRetryT+500), buf)
	if err != nil {
		t.Fatalf("retry vector rejected: %v", err)
	}
	if res.Source != SourceAgent || res.Type != TypeRetry || res.KeyID != 0 || res.Epoch != vecEpoch ||
		hex.EncodeToString(res.TID[:]) != vecTID || res.TimeMs != vecRetryT || res.R != 7 ||
		res.Client != vecClientRetry || !bytes.Equal(res.ODCID, vecODCID) || !bytes.Equal(res.RSCID, vecRSCID) {
		t.Fatalf("retry vector decoded as %+v", res)
	}

	res, err = v.Validate(mustHex(vecNewTok), TypeNewToken, netip.AddrPortFrom(vecClientNew, 443), time.UnixMilli(vecNewT+3600_000), buf)
	if err != nil {
		t.Fatalf("new_token vector rejected: %v", err)
	}
	if res.Source != SourceHost || res.Type != TypeNewToken || res.TimeMs != vecNewT || res.R != 8 ||
		res.Client.Addr() != vecClientNew || res.ODCID != nil || res.RSCID != nil {
		t.Fatalf("new_token vector decoded as %+v", res)
	}
	if c := v.Counts(); c[ReasonNone] != 2 {
		t.Fatalf("accepted count %d, want 2", c[ReasonNone])
	}
}
