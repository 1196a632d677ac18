package token

import (
	"bytes"
	"net/netip"
	"testing"
)

// FuzzValidate feeds arbitrary bytes to the validator. Nothing may panic,
// and whatever is accepted must be exactly the token that minting its
// decoded fields gives back: no other byte string can pass.
func FuzzValidate(f *testing.F) {
	f.Add(mustHex(vecRetryTok))
	f.Add(mustHex(vecNewTok))
	f.Add(mustHex(vecRetryTok)[:MinTokenLen])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0x90}, MaxTokenLen))

	kr := vecRing(f)
	v := newTestValidator(f, kr, ValidatorConfig{})
	buf := make([]byte, MaxPayloadLen)
	f.Fuzz(func(t *testing.T, tok []byte) {
		res, err := v.Inspect(tok, TypeAny, vecNow, buf)
		if err != nil {
			if ReasonOf(err) == ReasonNone {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		p := MintParams{Source: res.Source, Type: res.Type, TimeMs: int64(res.TimeMs), R: res.R,
			Client: res.Client, ODCID: res.ODCID, RSCID: res.RSCID}
		copy(p.TR[:], res.TID[:4])
		again, err := kr.Mint(nil, p)
		if err != nil {
			t.Fatalf("accepted token does not re-mint: %v", err)
		}
		if !bytes.Equal(again, tok) {
			t.Fatalf("accepted %x, re-minted %x", tok, again)
		}
		if _, err := v.Validate(tok, res.Type, netip.AddrPortFrom(res.Client.Addr(), res.Client.Port()), vecNow, buf); err != nil {
			t.Fatalf("Inspect accepted, Validate from the bound address rejected: %v", err)
		}
	})
}
