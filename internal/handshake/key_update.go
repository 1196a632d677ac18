package handshake

// KeyPhaseBit is the Key Phase bit of a short header's first byte.
const KeyPhaseBit = 0x04

// AppKeys holds the 1-RTT keys of a connection in both directions and
// follows key updates (RFC 9001 section 6). Generation g uses Key Phase
// g%2. It keeps the current receive keys, the next ones (derived ahead so
// that a peer's update costs no derivation on the packet path), and the
// previous ones until DropPreviousKeys. Header protection keys never
// change. Sending always uses the current generation: AppKeys updates its
// send keys at the same moment as its receive keys, whether this endpoint
// initiates the update (NextGeneration) or the peer does (a packet that
// opens with the next keys).
//
// The connection decides timing: when an update is permitted (handshake
// confirmed, current phase acknowledged), when to drop previous keys
// (about three PTOs), and what to do at the AEAD limits. AppKeys refuses
// a peer's update that comes too soon (see OnAckSent). AppKeys is not
// safe for concurrent use.
type AppKeys struct {
	suite   *suiteParams
	version *versionParams

	generation uint64
	sendSecret []byte // current generation's send secret
	recvSecret []byte // current generation's receive secret
	send       *Sealer

	prev, cur, next *Opener
	// lowestPN is the lowest packet number opened with the current
	// receive keys, or -1 before any: it separates delayed packets of
	// the previous phase from packets of the next one (section 6.5).
	lowestPN int64
	// ackedPeerPhase: a packet protected with the current keys carried an
	// ACK of a packet the peer protected with them. The peer may update
	// only after it received such an ACK (RFC 9001 section 6.1), so an
	// update before it is a second update without awaiting confirmation.
	ackedPeerPhase bool

	sendHP, recvHP *headerProtector
	failures       uint64
}

// NewAppKeys returns empty 1-RTT keys for cipher suite suiteID and
// version v. crypto/tls hands the two application traffic secrets over in
// separate events (a server can send before it can receive), so each is
// installed on its own with SetSendSecret and SetRecvSecret.
func NewAppKeys(suiteID uint16, v Version) (*AppKeys, error) {
	s, err := suiteByID(suiteID)
	if err != nil {
		return nil, err
	}
	vp, err := paramsFor(v)
	if err != nil {
		return nil, err
	}
	return &AppKeys{suite: s, version: vp, lowestPN: -1}, nil
}

// SetSendSecret installs the first send (write) application traffic
// secret. It may be called once.
func (k *AppKeys) SetSendSecret(secret []byte) error {
	if k.send != nil {
		return ErrKeysAlreadySet
	}
	send, err := newSealerFromSecret(k.suite, k.version, secret)
	if err != nil {
		return err
	}
	k.sendHP, k.send = send.hp, send
	k.sendSecret = append([]byte(nil), secret...)
	return nil
}

// SetRecvSecret installs the first receive (read) application traffic
// secret and derives the next generation's receive keys ahead of use. It
// may be called once.
func (k *AppKeys) SetRecvSecret(secret []byte) error {
	if k.cur != nil {
		return ErrKeysAlreadySet
	}
	cur, err := newOpenerFromSecret(k.suite, k.version, secret)
	if err != nil {
		return err
	}
	k.recvHP = cur.hp
	k.recvSecret = append([]byte(nil), secret...)
	next, err := k.deriveNextOpener()
	if err != nil {
		return err
	}
	k.cur, k.next = cur, next
	return nil
}

// CanSend reports whether the send secret is installed.
func (k *AppKeys) CanSend() bool { return k.send != nil }

// CanReceive reports whether the receive secret is installed.
func (k *AppKeys) CanReceive() bool { return k.cur != nil }

func (k *AppKeys) deriveNextOpener() (*Opener, error) {
	secret, err := nextSecret(k.suite, k.version, k.recvSecret)
	if err != nil {
		return nil, err
	}
	return k.openerFor(secret)
}

// sealerFor and openerFor build a later generation's keys from its
// secret; header protection keeps the first generation's key.
func (k *AppKeys) sealerFor(secret []byte) (*Sealer, error) {
	m, err := deriveKeyMaterial(k.suite, k.version, secret)
	if err != nil {
		return nil, err
	}
	return newSealer(k.suite, &m, k.sendHP)
}

func (k *AppKeys) openerFor(secret []byte) (*Opener, error) {
	m, err := deriveKeyMaterial(k.suite, k.version, secret)
	if err != nil {
		return nil, err
	}
	return newOpener(k.suite, &m, k.recvHP)
}

// Generation is the current key generation, 0 for the first 1-RTT keys.
func (k *AppKeys) Generation() uint64 { return k.generation }

// KeyPhase is the current Key Phase bit value (generation mod 2).
func (k *AppKeys) KeyPhase() bool { return k.generation&1 == 1 }

// Sealer returns the current send keys, nil before SetSendSecret. The
// returned Sealer is replaced at the next key update: fetch it again
// after one.
func (k *AppKeys) Sealer() *Sealer { return k.send }

// SealedPackets is how many packets the current send keys protected.
func (k *AppKeys) SealedPackets() uint64 {
	if k.send == nil {
		return 0
	}
	return k.send.sealed
}

// ConfidentialityLimitReached reports whether the current send keys hit
// the confidentiality limit: update keys (or close) before sending more.
func (k *AppKeys) ConfidentialityLimitReached() bool {
	return k.SealedPackets() >= k.suite.confLimit
}

// AuthFailures is how many 1-RTT packets failed authentication, over all
// key generations.
func (k *AppKeys) AuthFailures() uint64 { return k.failures }

// IntegrityLimit is the cipher suite's limit on packets failing
// authentication in a connection. The connection adds the failures of
// other encryption levels before comparing.
func (k *AppKeys) IntegrityLimit() uint64 { return k.suite.intLimit }

// HasPreviousKeys reports whether the previous generation's receive keys
// are still kept.
func (k *AppKeys) HasPreviousKeys() bool { return k.prev != nil }

// DropPreviousKeys discards the previous generation's receive keys; call
// it about three PTOs after the update (RFC 9001 section 6.5).
func (k *AppKeys) DropPreviousKeys() { k.prev = nil }

// NextGeneration initiates a key update (RFC 9001 section 6.1): the send
// keys and the current receive keys move to the next generation, and the
// old receive keys are kept as previous keys for delayed packets. The
// caller checks that an update is permitted first (RFC 9001 section 6:
// handshake confirmed, a packet of the current phase acknowledged); both
// secrets must be installed.
func (k *AppKeys) NextGeneration() error {
	return k.rotate()
}

func (k *AppKeys) rotate() error {
	if k.send == nil || k.cur == nil {
		return ErrKeysNotReady
	}
	sendSecret, err := nextSecret(k.suite, k.version, k.sendSecret)
	if err != nil {
		return err
	}
	send, err := k.sealerFor(sendSecret)
	if err != nil {
		return err
	}
	recvSecret, err := nextSecret(k.suite, k.version, k.recvSecret)
	if err != nil {
		return err
	}
	afterSecret, err := nextSecret(k.suite, k.version, recvSecret)
	if err != nil {
		return err
	}
	next, err := k.openerFor(afterSecret)
	if err != nil {
		return err
	}
	k.send, k.sendSecret = send, sendSecret
	k.prev, k.cur, k.next = k.cur, k.next, next
	k.recvSecret = recvSecret
	k.generation++
	k.lowestPN = -1
	k.ackedPeerPhase = false
	return nil
}

// OnAckSent records that the packet just protected with the current keys
// carried an ACK frame whose Largest Acknowledged is largest. Once one
// acknowledged a packet the peer protected with the current keys, the
// peer may update keys again; a packet with the next keys before that
// fails with ErrKeyUpdateTooSoon (RFC 9001 section 6.2).
func (k *AppKeys) OnAckSent(largest uint64) {
	if k.lowestPN >= 0 && largest >= uint64(k.lowestPN) {
		// Packets numbered lowestPN and above opened with the current
		// keys, so the largest acknowledged is one of the peer's packets
		// in the current phase.
		k.ackedPeerPhase = true
	}
}

// ProtectPacket sets the Key Phase bit of the short header in packet to
// the current phase and protects the packet with the current send keys;
// see Sealer.ProtectPacket.
func (k *AppKeys) ProtectPacket(packet []byte, pnOffset, pnLen int, pn uint64) ([]byte, error) {
	if k.send == nil {
		return nil, ErrKeysNotReady
	}
	if len(packet) == 0 {
		return nil, ErrInvalidPacketNumberOffset
	}
	packet[0] &^= KeyPhaseBit
	if k.KeyPhase() {
		packet[0] |= KeyPhaseBit
	}
	return k.send.ProtectPacket(packet, pnOffset, pnLen, pn)
}

// UnprotectPacket removes protection from a short-header packet in place
// (pnOffset = 1 + the connection ID length), choosing the receive keys
// from the Key Phase bit and the packet number (RFC 9001 section 6.5).
// largestPN is the largest 1-RTT packet number received, or -1. When the
// packet opens with the next keys, the peer has updated keys: AppKeys
// moves to the next generation (send keys included, so both secrets must
// be installed) and reports keyUpdated, so the connection can check the
// update was allowed. When the peer could not have seen an ACK in the
// current phase yet (OnAckSent), the authentic packet is refused with
// ErrKeyUpdateTooSoon and nothing changes: the connection closes with
// KEY_UPDATE_ERROR. On failure the packet's bytes are unspecified.
func (k *AppKeys) UnprotectPacket(packet []byte, pnOffset int, largestPN int64) (payload []byte, pn uint64, keyUpdated bool, err error) {
	if k.cur == nil {
		return nil, 0, false, ErrKeysNotReady
	}
	pnLen, truncated, err := unprotectHeader(k.recvHP, packet, pnOffset)
	if err != nil {
		return nil, 0, false, err
	}
	pn = decodePacketNumber(largestPN, truncated, pnLen)
	hdrLen := pnOffset + pnLen
	phase := packet[0]&KeyPhaseBit != 0

	o := k.cur
	switch {
	case phase == k.KeyPhase():
	case k.lowestPN < 0 || pn < uint64(k.lowestPN):
		// Older than anything in the current phase: the previous
		// generation, which a peer that has not yet seen our update (or
		// a reordered packet) still uses.
		if k.prev == nil {
			if k.generation > 0 {
				return nil, pn, false, ErrKeysDiscarded
			}
			o = k.next
		} else {
			o = k.prev
		}
	default:
		o = k.next
	}
	payload, err = o.Open(packet[hdrLen:hdrLen], packet[hdrLen:], pn, packet[:hdrLen])
	if err != nil {
		k.failures++
		return nil, pn, false, err
	}
	switch o {
	case k.cur:
		if k.lowestPN < 0 || pn < uint64(k.lowestPN) {
			k.lowestPN = int64(pn)
		}
	case k.next:
		if !k.ackedPeerPhase {
			return nil, pn, false, ErrKeyUpdateTooSoon
		}
		if err := k.rotate(); err != nil {
			return nil, pn, false, err
		}
		k.lowestPN = int64(pn)
		keyUpdated = true
	}
	return payload, pn, keyUpdated, nil
}
