package token

import (
	"net/netip"
	"testing"
	"time"
)

func newTestIssuer(t testing.TB, kr *KeyRing, src Source) *Issuer {
	t.Helper()
	is, err := kr.NewIssuer(src)
	if err != nil {
		t.Fatal(err)
	}
	return is
}

func decode(t testing.TB, v *Validator, tok []byte, from netip.AddrPort, now time.Time) Result {
	t.Helper()
	res, err := v.Validate(tok, TypeAny, from, now, make([]byte, MaxPayloadLen))
	if err != nil {
		t.Fatalf("issued token rejected: %v", err)
	}
	return res
}

func TestIssuerAmortizesAndRolls(t *testing.T) {
	kr := vecRing(t)
	v := newTestValidator(t, kr, ValidatorConfig{})
	is := newTestIssuer(t, kr, SourceAgent)
	t0 := vecNow

	tok1, err := is.AppendRetry(nil, vecClientRetry, vecODCID, vecRSCID, t0)
	if err != nil {
		t.Fatal(err)
	}
	r1 := decode(t, v, tok1, vecClientRetry, t0)
	if r1.Source != SourceAgent || r1.Type != TypeRetry || r1.TimeMs != uint64(t0.UnixMilli()) {
		t.Fatalf("decoded %+v", r1)
	}

	// Within the second: same TID, next R.
	t1 := t0.Add(999 * time.Millisecond)
	tok2, err := is.AppendNewToken(nil, vecClientNew, t1)
	if err != nil {
		t.Fatal(err)
	}
	r2 := decode(t, v, tok2, netip.AddrPortFrom(vecClientNew, 1), t1)
	if r2.TID != r1.TID || r2.R != r1.R+1 || r2.Type != TypeNewToken {
		t.Fatalf("second token: TID %x R %d, first TID %x R %d", r2.TID, r2.R, r1.TID, r1.R)
	}

	// A second after the TID started: a fresh TID.
	t2 := t0.Add(time.Second)
	tok3, err := is.AppendRetry(nil, vecClientRetry, nil, nil, t2)
	if err != nil {
		t.Fatal(err)
	}
	if r3 := decode(t, v, tok3, vecClientRetry, t2); r3.TID == r1.TID {
		t.Fatal("TID not rolled after one second")
	}

	// Clock stepping back also rolls.
	tok4, _ := is.AppendRetry(nil, vecClientRetry, nil, nil, t0)
	if r4 := decode(t, v, tok4, vecClientRetry, t0); r4.TID == r1.TID || r4.TID == tid(tok3) {
		t.Fatal("TID not rolled after the clock went back")
	}
}

func tid(tok []byte) (t [TIDLen]byte) {
	copy(t[:], tok[1:9])
	return
}

func TestIssuerRollsBeforeCounterRepeats(t *testing.T) {
	kr := vecRing(t)
	v := newTestValidator(t, kr, ValidatorConfig{})
	is := newTestIssuer(t, kr, SourceHost)
	is.maxN = 3
	seen := map[[TIDLen]byte]map[uint32]bool{}
	for i := range 10 {
		tok, err := is.AppendRetry(nil, vecClientRetry, nil, nil, vecNow)
		if err != nil {
			t.Fatal(err)
		}
		r := decode(t, v, tok, vecClientRetry, vecNow)
		if seen[r.TID] == nil {
			seen[r.TID] = map[uint32]bool{}
		}
		if seen[r.TID][r.R] {
			t.Fatalf("token %d repeats (TID %x, R %d)", i, r.TID, r.R)
		}
		seen[r.TID][r.R] = true
		if len(seen[r.TID]) > 3 {
			t.Fatalf("more than maxN tokens under TID %x", r.TID)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("%d TIDs for 10 tokens at 3 per TID, want 4", len(seen))
	}
}

func TestIssuerRollsAtEpochChange(t *testing.T) {
	kr, err := NewKeyRing(vecRoot(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v := newTestValidator(t, kr, ValidatorConfig{})
	is := newTestIssuer(t, kr, SourceHost)
	end := time.UnixMilli(60_000*1000 - 1) // last ms of epoch 999
	next := end.Add(time.Millisecond)
	a, _ := is.AppendRetry(nil, vecClientRetry, nil, nil, end)
	b, _ := is.AppendRetry(nil, vecClientRetry, nil, nil, next)
	ra := decode(t, v, a, vecClientRetry, next)
	rb := decode(t, v, b, vecClientRetry, next)
	if ra.Epoch != 999 || rb.Epoch != 1000 || ra.TID == rb.TID || ra.KeyID == rb.KeyID {
		t.Fatalf("across the epoch boundary: %+v / %+v", ra, rb)
	}
}

func TestIssuerErrors(t *testing.T) {
	kr := vecRing(t)
	if _, err := kr.NewIssuer(0); err == nil {
		t.Error("NewIssuer accepted source 0")
	}
	if _, err := kr.NewIssuer(3); err == nil {
		t.Error("NewIssuer accepted source 3")
	}
	is := newTestIssuer(t, kr, SourceHost)
	if _, err := is.AppendRetry(nil, netip.AddrPort{}, nil, nil, vecNow); err == nil {
		t.Error("invalid address accepted")
	}
	if _, err := is.AppendNewToken(nil, netip.Addr{}, vecNow); err == nil {
		t.Error("invalid address accepted")
	}
	if _, err := is.AppendRetry(nil, vecClientRetry, nil, nil, time.UnixMilli(-1)); err == nil {
		t.Error("time before 1970 accepted")
	}
	for _, p := range []MintParams{
		{Source: 0, Type: TypeRetry, Client: vecClientRetry},
		{Source: SourceHost, Type: 3, Client: vecClientRetry},
		{Source: SourceHost, Type: TypeRetry, TimeMs: -5, Client: vecClientRetry},
		{Source: SourceHost, Type: TypeNewToken, Client: vecClientRetry, ODCID: []byte{1}},
		{Source: SourceHost, Type: TypeRetry},
	} {
		if _, err := kr.Mint(nil, p); err == nil {
			t.Errorf("Mint accepted %+v", p)
		}
	}
}

func TestIssuerAppendsToDst(t *testing.T) {
	kr := vecRing(t)
	is := newTestIssuer(t, kr, SourceHost)
	prefix := []byte("prefix")
	out, err := is.AppendNewToken(prefix, vecClientNew, vecNow)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:6]) != "prefix" || len(out) != 6+HeaderLen+17+TagLen {
		t.Fatalf("got %q (len %d)", out[:6], len(out))
	}
}
