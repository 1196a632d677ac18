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

func newPacketCipher(s *suiteParams, key, iv []byte) (packetCipher, error) {
	aead, err := s.newAEAD(key)
	if err != nil {
		return packetCipher{}, err
	}
	c := packetCipher{suite: s, aead: aead}
	copy(c.iv[:], iv)
	return c, nil
}

// makeNonce sets c.nonce to the IV XOR the packet number left-padded to
// the IV length (RFC 9001 section 5.3).
func (c *packetCipher) makeNonce(pn uint64) {
	c.nonce = c.iv
	lo := binary.BigEndian.Uint64(c.iv[ivLen-8:]) ^ pn
	binary.BigEndian.PutUint64(c.nonce[ivLen-8:], lo)
}
