package handshake

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"

	"golang.org/x/crypto/chacha20"
)

const (
	// sampleLen is the ciphertext sample header protection uses.
	sampleLen = 16
	// sampleOffset is where the sample starts relative to the packet
	// number offset: it assumes a 4-byte packet number (RFC 9001
	// section 5.4.2).
	sampleOffset = 4
	// maxPNLen is the longest packet number encoding.
	maxPNLen = 4

	longHeaderBit = 0x80
	longHeaderHP  = 0x0f // reserved bits and packet number length
	shortHeaderHP = 0x1f // also covers the key phase bit
)

// headerProtector computes header protection masks (RFC 9001 section
// 5.4). The sample and mask live in the struct so that no per-packet slice
// escapes through the cipher.Block interface call.
type headerProtector struct {
	block  cipher.Block // AES suites
	chacha bool
	key    [32]byte // ChaCha20 key
	sample [sampleLen]byte
	mask   [sampleLen]byte
}

var zeroMask [5]byte

// init sets up the zero headerProtector h for header protection key
// hpKey of suite s.
func (h *headerProtector) init(s *suiteParams, hpKey []byte) error {
	h.chacha = s.chacha
	if s.chacha {
		copy(h.key[:], hpKey)
		return nil
	}
	block, err := aes.NewCipher(hpKey)
	if err != nil {
		return err
	}
	h.block = block
	return nil
}

// computeMask fills h.mask[:5] from the 16-byte sample.
func (h *headerProtector) computeMask(sample []byte) {
	copy(h.sample[:], sample)
	if !h.chacha {
		h.block.Encrypt(h.mask[:], h.sample[:])
		return
	}
	// counter = sample[0..4] little-endian, nonce = sample[4..16]. The
	// cipher stays on the stack: NewUnauthenticatedCipher is inlinable.
	c, err := chacha20.NewUnauthenticatedCipher(h.key[:], h.sample[4:])
	if err != nil {
		// Key and nonce lengths are fixed by construction.
		panic("handshake: chacha20 setup: " + err.Error())
	}
	c.SetCounter(binary.LittleEndian.Uint32(h.sample[:4]))
	c.XORKeyStream(h.mask[:5], zeroMask[:])
}

// firstByteMask returns which bits of the first byte header protection
// covers for this packet's header form.
func firstByteMask(first byte) byte {
	if first&longHeaderBit != 0 {
		return longHeaderHP
	}
	return shortHeaderHP
}
