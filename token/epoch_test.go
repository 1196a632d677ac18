package token

import (
	"net/netip"
	"testing"
	"time"
)

func TestEpochTransitions(t *testing.T) {
	const rot = 3600 // one-hour epochs: a new_token token outlives several
	kr, err := NewKeyRing(vecRoot(), rot*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddrPort("198.51.100.7:5000")
	e := uint64(480000)
	start := func(e uint64) int64 { return int64(e) * rot * 1000 }
	mint := func(typ Type, ms int64, tr byte) []byte {
		p := MintParams{Source: SourceHost, Type: typ, TimeMs: ms, TR: [4]byte{tr, 1, 2, 3}, R: 1, Client: from}
		tok, err := kr.Mint(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	check := func(name string, tok []byte, nowMs int64, want Reason) {
		t.Helper()
		v := newTestValidator(t, kr, ValidatorConfig{})
		_, err := v.Validate(tok, TypeAny, from, time.UnixMilli(nowMs), nil)
		if got := ReasonOf(err); got != want {
			t.Errorf("%s: reason %q, want %q", name, got, want)
		}
	}

	endOfE := start(e+1) - 1
	check("retry from the end of e, in e+1", mint(TypeRetry, endOfE, 1), start(e+1)+5000, ReasonNone)
	check("new_token from e, in e+1", mint(TypeNewToken, start(e), 2), start(e+1)+5000, ReasonNone)
	check("new_token from e, in e+2", mint(TypeNewToken, endOfE, 3), start(e+2), ReasonUnknownKey)
	check("retry from e+1 (issuer clock ahead), in e", mint(TypeRetry, start(e+1), 4), endOfE, ReasonNone)
	check("new_token from e-1, in e+15 (same key id, 16 h old)", mint(TypeNewToken, start(e)-1, 5), start(e+16)-1000, ReasonBadTIDMAC)

	// The collision case with a long new_token lifetime: still the TM,
	// never the key of the wrong epoch, rejects it.
	old := mint(TypeNewToken, start(e-16)+10, 6)
	v := newTestValidator(t, kr, ValidatorConfig{NewTokenMaxAge: 100 * 24 * time.Hour})
	if _, err := v.Validate(old, TypeAny, from, time.UnixMilli(start(e)+10), nil); ReasonOf(err) != ReasonBadTIDMAC {
		t.Errorf("token from e-16 in e: %v, want bad TID MAC", err)
	}
	if old[0]&0x0f != KeyID(e) {
		t.Fatal("test setup: key ids differ")
	}
}

func TestResolveEpochZero(t *testing.T) {
	kr := vecRing(t)
	for kid := range uint8(16) {
		ep, ok := kr.resolve(kid, 0)
		want := kid == 0 || kid == 1
		if ok != want || (ok && ep != uint64(kid)) {
			t.Errorf("key id %d at time 0: epoch %d ok %v", kid, ep, ok)
		}
	}
}

func TestNewKeyRingErrors(t *testing.T) {
	for _, tc := range []struct {
		root []byte
		rot  time.Duration
	}{
		{make([]byte, 31), 0},
		{make([]byte, 33), 0},
		{nil, 0},
		{make([]byte, 32), 1500 * time.Millisecond},
		{make([]byte, 32), -time.Second},
		{make([]byte, 32), 500 * time.Millisecond},
	} {
		if _, err := NewKeyRing(tc.root, tc.rot); err == nil {
			t.Errorf("NewKeyRing(%d bytes, %v) accepted", len(tc.root), tc.rot)
		}
	}
	kr, err := NewKeyRing(make([]byte, 32), 0)
	if err != nil || kr.Rotation() != DefaultRotation {
		t.Fatalf("default rotation: %v %v", kr, err)
	}
	if e := kr.Epoch(time.Unix(86400*20000+86399, 0)); e != 20000 {
		t.Fatalf("Epoch = %d", e)
	}
}
