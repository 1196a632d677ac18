package token

import (
	"testing"
)

// The hot paths must not allocate: amortized issue, cached validation and
// the rejection of a forged TID.
func TestHotPathsDoNotAllocate(t *testing.T) {
	kr := vecRing(t)
	is := newTestIssuer(t, kr, SourceAgent)
	v := newTestValidator(t, kr, ValidatorConfig{})
	dst := make([]byte, 0, MaxTokenLen)
	buf := make([]byte, MaxPayloadLen)
	tok := mustHex(vecRetryTok)
	forged := flip(tok, 8)
	if _, err := is.AppendRetry(dst, vecClientRetry, vecODCID, vecRSCID, vecNow); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(tok, TypeRetry, vecClientRetry, vecNow, buf); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"issue retry":     func() { _, _ = is.AppendRetry(dst, vecClientRetry, vecODCID, vecRSCID, vecNow) },
		"issue new_token": func() { _, _ = is.AppendNewToken(dst, vecClientNew, vecNow) },
		"cached validate": func() {
			if _, err := v.Validate(tok, TypeRetry, vecClientRetry, vecNow, buf); err != nil {
				t.Fatal(err)
			}
		},
		"forged TID": func() {
			if _, err := v.Validate(forged, TypeRetry, vecClientRetry, vecNow, buf); err == nil {
				t.Fatal("forged accepted")
			}
		},
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per run", name, n)
		}
	}
}
