package handshake

import "slices"

// Sealer protects outgoing packets of one encryption level (and, for
// 1-RTT, one key phase). It is not safe for concurrent use.
type Sealer struct {
	packetCipher
	hp     *headerProtector
	sealed uint64
}

// NewSealer builds a Sealer from a traffic secret of cipher suite suiteID,
// as crypto/tls hands it to QUIC, using version v's labels.
func NewSealer(suiteID uint16, secret []byte, v Version) (*Sealer, error) {
	s, vp, err := lookup(suiteID, secret, v)
	if err != nil {
		return nil, err
	}
	return newSealerFromSecret(s, vp, secret)
}

// sealerWithHP keeps a Sealer and its header protector in one allocation.
type sealerWithHP struct {
	sealer Sealer
	hp     headerProtector
}

func newSealerFromSecret(s *suiteParams, vp *versionParams, secret []byte) (*Sealer, error) {
	b := new(sealerWithHP)
	if err := b.sealer.initFromSecret(s, vp, secret, &b.hp); err != nil {
		return nil, err
	}
	return &b.sealer, nil
}

// initFromSecret derives secret's keys into the zero Sealer s and into
// hp, which becomes s's header protector.
func (s *Sealer) initFromSecret(suite *suiteParams, vp *versionParams, secret []byte, hp *headerProtector) error {
	s.hp = hp
	return initDirection(suite, vp, secret, &s.packetCipher, hp)
}

// newSealer builds a Sealer for the key material of a later key phase,
// which keeps the header protector hp of the first (RFC 9001 section 6).
func newSealer(s *suiteParams, m *keyMaterial, hp *headerProtector) (*Sealer, error) {
	sl := &Sealer{hp: hp}
	if err := sl.init(s, m.aeadKey(s), m.iv[:]); err != nil {
		return nil, err
	}
	return sl, nil
}

// Overhead is the number of bytes sealing adds to a payload (the tag).
func (s *Sealer) Overhead() int { return s.aead.Overhead() }

// SealedPackets is how many packets this Sealer has protected; compare
// with ConfidentialityLimit.
func (s *Sealer) SealedPackets() uint64 { return s.sealed }

// ConfidentialityLimit is the RFC 9001 section 6.6 limit on packets
// sealed with one key for this Sealer's cipher suite.
func (s *Sealer) ConfidentialityLimit() uint64 { return s.suite.confLimit }

// Seal encrypts plaintext for packet number pn with header as associated
// data and appends ciphertext and tag to dst. To seal in place pass
// plaintext[:0] as dst, with Overhead bytes of spare capacity; any other
// overlap of dst and plaintext panics (as in crypto/cipher). Header
// protection is separate: see ApplyHeaderProtection.
func (s *Sealer) Seal(dst, plaintext []byte, pn uint64, header []byte) []byte {
	s.makeNonce(pn)
	s.sealed++
	return s.aead.Seal(dst, s.nonce[:], plaintext, header)
}

// ProtectPacket protects a whole packet in place. packet holds the header,
// whose packet number (pnLen bytes at pnOffset, matching the low two bits
// of the first byte) encodes pn, followed by the plaintext payload. The
// payload is encrypted with the header as associated data, the tag is
// appended (within packet's capacity when it has Overhead spare bytes,
// which keeps this allocation free) and header protection is applied.
// A long header's Length field must already count the tag.
//
// The payload must be long enough for the header protection sample:
// pnLen + len(payload) >= 4 (the sender pads short packets).
func (s *Sealer) ProtectPacket(packet []byte, pnOffset, pnLen int, pn uint64) ([]byte, error) {
	if pnLen < 1 || pnLen > maxPNLen {
		return nil, ErrInvalidPacketNumberLength
	}
	if pnOffset < 1 || pnOffset > len(packet)-pnLen {
		return nil, ErrInvalidPacketNumberOffset
	}
	if int(packet[0]&0x03)+1 != pnLen {
		return nil, ErrInvalidPacketNumberLength
	}
	overhead := s.aead.Overhead()
	if len(packet)+overhead-pnOffset < sampleOffset+sampleLen {
		return nil, ErrPacketTooShort
	}
	hdrLen := pnOffset + pnLen
	packet = slices.Grow(packet, overhead)
	payload := packet[hdrLen:]
	s.Seal(payload[:0], payload, pn, packet[:hdrLen])
	packet = packet[:len(packet)+overhead]
	s.protectHeader(packet, pnOffset, pnLen)
	return packet, nil
}

// ApplyHeaderProtection applies header protection to a packet whose
// payload Seal has already encrypted: it masks the first byte and the
// pnLen packet number bytes at pnOffset using a sample of the ciphertext.
func (s *Sealer) ApplyHeaderProtection(packet []byte, pnOffset, pnLen int) error {
	if pnLen < 1 || pnLen > maxPNLen {
		return ErrInvalidPacketNumberLength
	}
	if pnOffset < 1 || pnOffset > len(packet)-pnLen {
		return ErrInvalidPacketNumberOffset
	}
	if len(packet)-pnOffset < sampleOffset+sampleLen {
		return ErrPacketTooShort
	}
	s.protectHeader(packet, pnOffset, pnLen)
	return nil
}

func (s *Sealer) protectHeader(packet []byte, pnOffset, pnLen int) {
	start := pnOffset + sampleOffset
	s.hp.computeMask(packet[start : start+sampleLen])
	m := &s.hp.mask
	packet[0] ^= m[0] & firstByteMask(packet[0])
	for i := range pnLen {
		packet[pnOffset+i] ^= m[1+i]
	}
}
