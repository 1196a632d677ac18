package handshake

// Opener removes protection from incoming packets of one encryption level
// (and, for 1-RTT, one key phase). It is not safe for concurrent use.
type Opener struct {
	packetCipher
	hp       *headerProtector
	failures uint64
}

// NewOpener builds an Opener from a traffic secret of cipher suite
// suiteID, as crypto/tls hands it to QUIC, using version v's labels.
func NewOpener(suiteID uint16, secret []byte, v Version) (*Opener, error) {
	s, vp, err := lookup(suiteID, secret, v)
	if err != nil {
		return nil, err
	}
	return newOpenerFromSecret(s, vp, secret)
}

// openerWithHP keeps an Opener and its header protector in one allocation.
type openerWithHP struct {
	opener Opener
	hp     headerProtector
}

func newOpenerFromSecret(s *suiteParams, vp *versionParams, secret []byte) (*Opener, error) {
	b := new(openerWithHP)
	if err := b.opener.initFromSecret(s, vp, secret, &b.hp); err != nil {
		return nil, err
	}
	return &b.opener, nil
}

// initFromSecret derives secret's keys into the zero Opener o and into
// hp, which becomes o's header protector.
func (o *Opener) initFromSecret(suite *suiteParams, vp *versionParams, secret []byte, hp *headerProtector) error {
	o.hp = hp
	return initDirection(suite, vp, secret, &o.packetCipher, hp)
}

// newOpener builds an Opener for the key material of a later key phase,
// which keeps the header protector hp of the first (RFC 9001 section 6).
func newOpener(s *suiteParams, m *keyMaterial, hp *headerProtector) (*Opener, error) {
	o := &Opener{hp: hp}
	if err := o.init(s, m.aeadKey(s), m.iv[:]); err != nil {
		return nil, err
	}
	return o, nil
}

// Overhead is the number of bytes of a ciphertext that are tag.
func (o *Opener) Overhead() int { return o.aead.Overhead() }

// AuthFailures is how many packets failed authentication with this Opener.
// The integrity limit counts failures across all keys of a connection.
func (o *Opener) AuthFailures() uint64 { return o.failures }

// IntegrityLimit is the RFC 9001 section 6.6 limit on packets failing
// authentication in a connection for this Opener's cipher suite.
func (o *Opener) IntegrityLimit() uint64 { return o.suite.intLimit }

// UnprotectHeader removes header protection in place: packet must be
// exactly one QUIC packet (slice coalesced packets by their Length) with
// its packet number at pnOffset. It unmasks the first byte (so the caller
// can then read the reserved and key phase bits) and the packet number,
// and returns the packet number length and the truncated packet number.
// The full packet number is wire.DecodePacketNumber's job.
func (o *Opener) UnprotectHeader(packet []byte, pnOffset int) (pnLen int, truncatedPN uint64, err error) {
	return unprotectHeader(o.hp, packet, pnOffset)
}

func unprotectHeader(hp *headerProtector, packet []byte, pnOffset int) (pnLen int, truncatedPN uint64, err error) {
	if pnOffset < 1 || pnOffset >= len(packet) {
		return 0, 0, ErrInvalidPacketNumberOffset
	}
	if len(packet)-pnOffset < sampleOffset+sampleLen {
		return 0, 0, ErrPacketTooShort
	}
	start := pnOffset + sampleOffset
	hp.computeMask(packet[start : start+sampleLen])
	m := &hp.mask
	packet[0] ^= m[0] & firstByteMask(packet[0])
	pnLen = int(packet[0]&0x03) + 1
	for i := range pnLen {
		packet[pnOffset+i] ^= m[1+i]
		truncatedPN = truncatedPN<<8 | uint64(packet[pnOffset+i])
	}
	return pnLen, truncatedPN, nil
}

// Open authenticates and decrypts ciphertext (payload and tag) of packet
// number pn with header (up to and including the packet number, header
// protection removed) as associated data, appending the plaintext to dst.
// To open in place pass ciphertext[:0] as dst. On failure it returns
// ErrDecryptionFailed, allocation free, and the contents of dst's spare
// capacity are unspecified.
func (o *Opener) Open(dst, ciphertext []byte, pn uint64, header []byte) ([]byte, error) {
	o.makeNonce(pn)
	out, err := o.aead.Open(dst, o.nonce[:], ciphertext, header)
	if err != nil {
		o.failures++
		return nil, ErrDecryptionFailed
	}
	return out, nil
}

// UnprotectPacket removes header protection and decrypts a whole packet
// in place. largestPN is the largest packet number received so far in
// this packet number space, or -1 if none; it recovers the full packet
// number. The returned payload aliases packet. On failure the packet's
// bytes are unspecified (header protection is removed and crypto/cipher
// may clear the payload): drop it.
func (o *Opener) UnprotectPacket(packet []byte, pnOffset int, largestPN int64) (payload []byte, pn uint64, err error) {
	pnLen, truncated, err := o.UnprotectHeader(packet, pnOffset)
	if err != nil {
		return nil, 0, err
	}
	pn = decodePacketNumber(largestPN, truncated, pnLen)
	hdrLen := pnOffset + pnLen
	payload, err = o.Open(packet[hdrLen:hdrLen], packet[hdrLen:], pn, packet[:hdrLen])
	if err != nil {
		return nil, pn, err
	}
	return payload, pn, nil
}
