package token

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"
)

var vecNow = time.UnixMilli(vecRetryT + 500)

func newTestValidator(t testing.TB, kr *KeyRing, cfg ValidatorConfig) *Validator {
	t.Helper()
	v, err := kr.NewValidator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mintRaw seals an arbitrary payload under the real keys of h's epoch, so
// tests can reach the checks after the AEAD.
func mintRaw(t testing.TB, kr *KeyRing, h header, epoch uint64, pl []byte) []byte {
	t.Helper()
	ek, err := kr.keys(epoch)
	if err != nil {
		t.Fatal(err)
	}
	mac, _ := newTIDMAC()
	tm := mac.compute(ek, h.tid[:4])
	copy(h.tid[4:], tm[:])
	h.keyID = KeyID(epoch)
	keys, err := deriveTokenKeys(ek.psk[:], h.tid[:])
	if err != nil {
		t.Fatal(err)
	}
	var hb [HeaderLen]byte
	var n [12]byte
	return seal(nil, &hb, &n, &h, &keys, pl)
}

func flip(tok []byte, bit int) []byte {
	c := bytes.Clone(tok)
	c[bit/8] ^= 0x80 >> (bit % 8)
	return c
}

func TestRejectionReasons(t *testing.T) {
	kr := vecRing(t)
	retry := mustHex(vecRetryTok)
	newTok := mustHex(vecNewTok)
	newNow := time.UnixMilli(vecNewT + 1000)
	newFrom := netip.AddrPortFrom(vecClientNew, 4433)
	withFlags := func(tok []byte, b0 byte) []byte {
		c := bytes.Clone(tok)
		c[0] = b0
		return c
	}
	rawHdr := header{source: SourceAgent, typ: TypeRetry, tid: [8]byte{1, 2, 3, 4}, t: vecRetryT, r: 1}
	retryPayload, _ := appendPayload(nil, TypeRetry, vecClientRetry, vecODCID, vecRSCID)

	cases := []struct {
		name string
		tok  []byte
		want Type
		from netip.AddrPort
		now  time.Time
		cfg  ValidatorConfig
		r    Reason
	}{
		{"empty", nil, TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonMalformed},
		{"short", retry[:MinTokenLen-1], TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonMalformed},
		{"long", append(bytes.Clone(retry), make([]byte, MaxTokenLen)...), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonMalformed},
		{"source 00", withFlags(retry, 0x10), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonUnknownSource},
		{"source 11", withFlags(retry, 0xd0), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonUnknownSource},
		{"type 00", withFlags(retry, 0x80), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonUnknownType},
		{"type 11", withFlags(retry, 0xb0), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonUnknownType},
		{"new_token as retry", newTok, TypeRetry, newFrom, newNow, ValidatorConfig{}, ReasonWrongType},
		{"retry as new_token", retry, TypeNewToken, vecClientRetry, vecNow, ValidatorConfig{}, ReasonWrongType},
		{"unknown key id", withFlags(retry, 0x95), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonUnknownKey},
		{"key id of e+1", withFlags(retry, 0x91), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadTIDMAC},
		{"forged TR", flip(retry, 8), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadTIDMAC},
		{"forged TM", flip(retry, 8*8+7), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadTIDMAC},
		{"future", retry, TypeAny, vecClientRetry, time.UnixMilli(vecRetryT - 2001), ValidatorConfig{}, ReasonFromFuture},
		{"future, more skew allowed", retry, TypeAny, vecClientRetry, time.UnixMilli(vecRetryT - 2001), ValidatorConfig{MaxFuture: 3 * time.Second}, ReasonNone},
		{"just within skew", retry, TypeAny, vecClientRetry, time.UnixMilli(vecRetryT - 2000), ValidatorConfig{}, ReasonNone},
		{"retry expired", retry, TypeAny, vecClientRetry, time.UnixMilli(vecRetryT + 10001), ValidatorConfig{}, ReasonExpired},
		{"retry at max age", retry, TypeAny, vecClientRetry, time.UnixMilli(vecRetryT + 10000), ValidatorConfig{}, ReasonNone},
		{"retry shorter age", retry, TypeAny, vecClientRetry, time.UnixMilli(vecRetryT + 1001), ValidatorConfig{RetryMaxAge: time.Second}, ReasonExpired},
		{"new_token expired", newTok, TypeAny, newFrom, time.UnixMilli(vecNewT + 86400_001), ValidatorConfig{}, ReasonExpired},
		{"new_token at max age", newTok, TypeAny, newFrom, time.UnixMilli(vecNewT + 86400_000), ValidatorConfig{}, ReasonNone},
		{"new_token shorter age", newTok, TypeAny, newFrom, time.UnixMilli(vecNewT + 3600_001), ValidatorConfig{NewTokenMaxAge: time.Hour}, ReasonExpired},
		{"flipped T", flip(retry, 16*8+7), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadTag},
		{"flipped R", flip(retry, 20*8+7), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadTag},
		{"flipped ciphertext", flip(retry, HeaderLen*8), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadTag},
		{"flipped tag", flip(retry, len(retry)*8-1), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadTag},
		{"payload bad ip_len", mintRaw(t, kr, rawHdr, vecEpoch, []byte{5, 1, 2, 3, 4, 5, 0, 1, 0, 0}), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadPayload},
		{"payload trailing byte", mintRaw(t, kr, rawHdr, vecEpoch, append(bytes.Clone(retryPayload), 0)), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadPayload},
		{"payload CID 21", mintRaw(t, kr, rawHdr, vecEpoch, append([]byte{4, 1, 2, 3, 4, 0, 1, 21}, make([]byte, 22)...)), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadPayload},
		{"payload mapped as 16", mintRaw(t, kr, header{source: SourceHost, typ: TypeNewToken, t: vecRetryT}, vecEpoch,
			append([]byte{16}, netip.MustParseAddr("::ffff:192.0.2.10").AsSlice()...)), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadPayload},
		{"payload truncated", mintRaw(t, kr, rawHdr, vecEpoch, retryPayload[:len(retryPayload)-1]), TypeAny, vecClientRetry, vecNow, ValidatorConfig{}, ReasonBadPayload},
		{"other IP", retry, TypeAny, netip.MustParseAddrPort("192.0.2.11:54321"), vecNow, ValidatorConfig{}, ReasonAddrMismatch},
		{"no source address", retry, TypeAny, netip.AddrPort{}, vecNow, ValidatorConfig{}, ReasonAddrMismatch},
		{"other port", retry, TypeAny, netip.MustParseAddrPort("192.0.2.10:54322"), vecNow, ValidatorConfig{}, ReasonPortMismatch},
		{"new_token ignores port", newTok, TypeAny, netip.AddrPortFrom(vecClientNew, 1), newNow, ValidatorConfig{}, ReasonNone},
		{"new_token other IP", newTok, TypeAny, netip.MustParseAddrPort("[2001:db8::2]:1"), newNow, ValidatorConfig{}, ReasonAddrMismatch},
	}
	seen := map[Reason]bool{}
	for _, tc := range cases {
		v := newTestValidator(t, kr, tc.cfg)
		_, err := v.Validate(tc.tok, tc.want, tc.from, tc.now, make([]byte, 0, MaxPayloadLen))
		if got := ReasonOf(err); got != tc.r {
			t.Errorf("%s: reason %q (%v), want %q", tc.name, got, err, tc.r)
			continue
		}
		if tc.r != ReasonNone {
			if !errors.Is(err, rejectErrs[tc.r]) {
				t.Errorf("%s: errors.Is failed for %v", tc.name, err)
			}
			if v.Counts()[tc.r] != 1 {
				t.Errorf("%s: reason not counted", tc.name)
			}
		}
		seen[tc.r] = true
	}
	for r := Reason(1); r < NumReasons; r++ {
		if !seen[r] && r != ReasonReplayed { // a ReplayFilter's (replay_test.go)
			t.Errorf("no test case for reason %q", r)
		}
		if r.String() == "" {
			t.Errorf("reason %d has no name", r)
		}
	}
}

func TestEveryBitFlipRejected(t *testing.T) {
	kr := vecRing(t)
	v := newTestValidator(t, kr, ValidatorConfig{})
	buf := make([]byte, MaxPayloadLen)
	for _, tc := range []struct {
		tok  []byte
		from netip.AddrPort
	}{
		{mustHex(vecRetryTok), vecClientRetry},
		{mustHex(vecNewTok), netip.AddrPortFrom(vecClientNew, 9)},
	} {
		for bit := range len(tc.tok) * 8 {
			if _, err := v.Validate(flip(tc.tok, bit), TypeAny, tc.from, vecNow, buf); err == nil {
				t.Fatalf("token %x with bit %d flipped accepted", tc.tok[:1], bit)
			}
		}
		for n := range len(tc.tok) {
			if _, err := v.Validate(tc.tok[:n], TypeAny, tc.from, vecNow, buf); err == nil {
				t.Fatalf("token truncated to %d bytes accepted", n)
			}
		}
		if _, err := v.Validate(append(bytes.Clone(tc.tok), 0), TypeAny, tc.from, vecNow, buf); err == nil {
			t.Fatal("token with a byte appended accepted")
		}
		if _, err := v.Validate(tc.tok, TypeAny, tc.from, vecNow, buf); err != nil {
			t.Fatalf("original token rejected: %v", err)
		}
	}
}

func TestAddressForms(t *testing.T) {
	kr := vecRing(t)
	v := newTestValidator(t, kr, ValidatorConfig{})
	buf := make([]byte, MaxPayloadLen)
	mint := func(client string, typ Type) []byte {
		p := vecRetryParams()
		p.Type, p.Client = typ, netip.MustParseAddrPort(client)
		if typ == TypeNewToken {
			p.ODCID, p.RSCID = nil, nil
		}
		tok, err := kr.Mint(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, tc := range []struct {
		minted, from, decoded string
		typ                   Type
		ok                    bool
	}{
		{"192.0.2.1:443", "[::ffff:192.0.2.1]:443", "192.0.2.1:443", TypeRetry, true},
		{"[::ffff:192.0.2.1]:443", "192.0.2.1:443", "192.0.2.1:443", TypeRetry, true},
		{"[::ffff:192.0.2.1]:443", "[::ffff:192.0.2.1]:443", "192.0.2.1:443", TypeRetry, true},
		{"[2001:db8::5]:443", "[2001:db8::5]:443", "[2001:db8::5]:443", TypeRetry, true},
		{"[fe80::1]:443", "[fe80::1%eth0]:443", "[fe80::1]:443", TypeRetry, true},
		{"[2001:db8::5]:443", "[2001:db8::6]:443", "[2001:db8::5]:443", TypeRetry, false},
		{"[::ffff:192.0.2.1]:0", "192.0.2.1:7", "192.0.2.1:0", TypeNewToken, true},
		{"[2001:db8::5]:0", "[2001:db8::5]:7", "[2001:db8::5]:0", TypeNewToken, true},
		{"192.0.2.1:0", "[2001:db8::5]:7", "192.0.2.1:0", TypeNewToken, false},
	} {
		tok := mint(tc.minted, tc.typ)
		res, err := v.Validate(tok, tc.typ, netip.MustParseAddrPort(tc.from), vecNow, buf)
		if (err == nil) != tc.ok {
			t.Errorf("minted for %s, from %s: err %v, want ok=%v", tc.minted, tc.from, err, tc.ok)
		}
		if got := res.Client.String(); got != tc.decoded {
			t.Errorf("minted for %s: decoded %s, want %s", tc.minted, got, tc.decoded)
		}
	}
}

func TestCIDLengths(t *testing.T) {
	kr := vecRing(t)
	v := newTestValidator(t, kr, ValidatorConfig{})
	is, err := kr.NewIssuer(SourceHost)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 8, 20} {
		odcid := bytes.Repeat([]byte{0xaa}, n)
		rscid := bytes.Repeat([]byte{0xbb}, 20-n)
		for _, mint := range []func() ([]byte, error){
			func() ([]byte, error) {
				p := vecRetryParams()
				p.ODCID, p.RSCID = odcid, rscid
				return kr.Mint(nil, p)
			},
			func() ([]byte, error) { return is.AppendRetry(nil, vecClientRetry, odcid, rscid, vecNow) },
		} {
			tok, err := mint()
			if err != nil {
				t.Fatalf("CID length %d: %v", n, err)
			}
			res, err := v.Validate(tok, TypeRetry, vecClientRetry, vecNow, make([]byte, MaxPayloadLen))
			if err != nil {
				t.Fatalf("CID length %d: %v", n, err)
			}
			if !bytes.Equal(res.ODCID, odcid) || !bytes.Equal(res.RSCID, rscid) {
				t.Fatalf("CID length %d: got %x %x", n, res.ODCID, res.RSCID)
			}
		}
	}
	long := make([]byte, 21)
	p := vecRetryParams()
	p.ODCID = long
	if _, err := kr.Mint(nil, p); err == nil {
		t.Error("Mint accepted a 21-byte ODCID")
	}
	p = vecRetryParams()
	p.RSCID = long
	if _, err := kr.Mint(nil, p); err == nil {
		t.Error("Mint accepted a 21-byte RSCID")
	}
	if _, err := is.AppendRetry(nil, vecClientRetry, long, nil, vecNow); err == nil {
		t.Error("Issuer accepted a 21-byte ODCID")
	}
	if _, err := is.AppendRetry(nil, vecClientRetry, nil, long, vecNow); err == nil {
		t.Error("Issuer accepted a 21-byte RSCID")
	}
}

func TestInspectSkipsAddress(t *testing.T) {
	kr := vecRing(t)
	v := newTestValidator(t, kr, ValidatorConfig{})
	res, err := v.Inspect(mustHex(vecRetryTok), TypeAny, vecNow, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Client != vecClientRetry || !bytes.Equal(res.RSCID, vecRSCID) {
		t.Fatalf("decoded %+v", res)
	}
	// Early rejection leaves the payload fields empty but keeps the header.
	res, err = v.Inspect(flip(mustHex(vecRetryTok), 8), TypeAny, vecNow, nil)
	if ReasonOf(err) != ReasonBadTIDMAC || res.Client.IsValid() || res.R != 7 || res.Epoch != vecEpoch {
		t.Fatalf("forged TID: %v %+v", err, res)
	}
}

func TestBufferReuseAndSmallBuffer(t *testing.T) {
	kr := vecRing(t)
	v := newTestValidator(t, kr, ValidatorConfig{})
	// A nil buffer still works (Open allocates).
	res, err := v.Validate(mustHex(vecRetryTok), TypeRetry, vecClientRetry, vecNow, nil)
	if err != nil || !bytes.Equal(res.ODCID, vecODCID) {
		t.Fatalf("nil buffer: %v %+v", err, res)
	}
	// The CIDs alias the caller's buffer.
	buf := make([]byte, MaxPayloadLen)
	res, err = v.Validate(mustHex(vecRetryTok), TypeRetry, vecClientRetry, vecNow, buf)
	if err != nil {
		t.Fatal(err)
	}
	if &res.ODCID[0] != &buf[8] {
		t.Error("ODCID does not alias the buffer")
	}
	if cap(res.ODCID) != len(res.ODCID) {
		t.Error("ODCID capacity reaches into the next field")
	}
}
