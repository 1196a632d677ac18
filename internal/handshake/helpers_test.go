package handshake

// Helpers that only this package's tests use: the production paths derive
// keys into keyMaterial on the stack (deriveKeyMaterial) instead.

// PacketKeys is the keying material derived from one traffic secret
// (RFC 9001 section 5.1): the AEAD key, the IV the packet number is
// XORed into, and the header protection key.
type PacketKeys struct {
	Key []byte
	IV  []byte
	HP  []byte
}

// DerivePacketKeys derives the AEAD key, IV and header protection key for
// cipher suite suiteID from a traffic secret, with version v's labels.
func DerivePacketKeys(suiteID uint16, secret []byte, v Version) (PacketKeys, error) {
	s, vp, err := lookup(suiteID, secret, v)
	if err != nil {
		return PacketKeys{}, err
	}
	m, err := deriveKeyMaterial(s, vp, secret)
	if err != nil {
		return PacketKeys{}, err
	}
	// One allocation for the three; the capacities keep an append to one
	// from overwriting the next.
	n := s.keyLen
	buf := make([]byte, 0, 2*n+ivLen)
	buf = append(append(append(buf, m.aeadKey(s)...), m.iv[:]...), m.hpKey(s)...)
	return PacketKeys{Key: buf[:n:n], IV: buf[n : n+ivLen : n+ivLen], HP: buf[n+ivLen:]}, nil
}

// NextSecret derives the traffic secret of the next key phase
// (RFC 9001 section 6.1: "quic ku", RFC 9369: "quicv2 ku").
func NextSecret(suiteID uint16, secret []byte, v Version) ([]byte, error) {
	s, vp, err := lookup(suiteID, secret, v)
	if err != nil {
		return nil, err
	}
	return nextSecret(s, vp, secret)
}

// AEADLimits returns the confidentiality and integrity limits (RFC 9001
// section 6.6) of the TLS cipher suite suiteID.
func AEADLimits(suiteID uint16) (confidentiality, integrity uint64, err error) {
	s, err := suiteByID(suiteID)
	if err != nil {
		return 0, 0, err
	}
	return s.confLimit, s.intLimit, nil
}
