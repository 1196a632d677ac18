package token

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

// tokenKeys are the keys of one TID: the AEAD and the base nonce.
type tokenKeys struct {
	aead  cipher.AEAD
	nBase [12]byte
}

// deriveTokenSecrets runs the per-TID part of the key schedule (paper
// Algorithm 1): PRK = HKDF-Extract(K_psk, TID), S_tok, then K_enc, N_base.
func deriveTokenSecrets(psk, tid []byte) (kEnc, nBase []byte, err error) {
	prk, err := hkdf.Extract(sha256.New, tid, psk)
	if err != nil {
		return nil, nil, fmt.Errorf("token: HKDF-Extract: %w", err)
	}
	sTok := tlskdf.ExpandLabel(sha256.New, prk, "retry token", nil, 32)
	kEnc = tlskdf.ExpandLabel(sha256.New, sTok, "token key", nil, 16)
	nBase = tlskdf.ExpandLabel(sha256.New, sTok, "token iv", nil, 12)
	return kEnc, nBase, nil
}

func deriveTokenKeys(psk, tid []byte) (tokenKeys, error) {
	var k tokenKeys
	kEnc, nBase, err := deriveTokenSecrets(psk, tid)
	if err != nil {
		return k, err
	}
	block, err := aes.NewCipher(kEnc)
	if err != nil {
		return k, fmt.Errorf("token: %w", err)
	}
	if k.aead, err = cipher.NewGCM(block); err != nil {
		return k, fmt.Errorf("token: %w", err)
	}
	copy(k.nBase[:], nBase)
	return k, nil
}

// nonce computes N_enc = N_base XOR (T || R); tr is header bytes 9..21.
func nonce(dst *[12]byte, nBase *[12]byte, tr []byte) {
	for i := range dst {
		dst[i] = nBase[i] ^ tr[i]
	}
}
