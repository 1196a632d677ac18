package handshake

import (
	"crypto/cipher"
	"encoding/binary"
)

// packetCipher is the AEAD half of one direction's keys for one key
// phase. The nonce buffer is reused for every packet.
type packetCipher struct {
	suite *suiteParams
	aead  cipher.AEAD
	iv    [ivLen]byte
	nonce [ivLen]byte
}

// init sets up the AEAD of key and copies the IV.
func (c *packetCipher) init(s *suiteParams, key, iv []byte) error {
	aead, err := s.newAEAD(key)
	if err != nil {
		return err
	}
	c.suite, c.aead = s, aead
	copy(c.iv[:], iv)
	return nil
}

// makeNonce sets c.nonce to the IV XOR the packet number left-padded to
// the IV length (RFC 9001 section 5.3).
func (c *packetCipher) makeNonce(pn uint64) {
	c.nonce = c.iv
	lo := binary.BigEndian.Uint64(c.iv[ivLen-8:]) ^ pn
	binary.BigEndian.PutUint64(c.nonce[ivLen-8:], lo)
}
