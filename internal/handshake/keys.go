package handshake

import (
	"crypto/sha256"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

// ivLen is the AEAD nonce length of every QUIC cipher suite.
const ivLen = 12

// maxKeyLen is the longest AEAD or header protection key of the suites.
const maxKeyLen = 32

// keyMaterial is the keying material derived from one traffic secret
// (RFC 9001 section 5.1: the AEAD key, the IV the packet number is XORed
// into, the header protection key) in fixed arrays: building a Sealer or
// Opener derives its keys on the stack and hands them to crypto/aes and
// crypto/cipher, which copy them, so nothing is allocated for them.
type keyMaterial struct {
	key [maxKeyLen]byte
	iv  [ivLen]byte
	hp  [maxKeyLen]byte
}

func (m *keyMaterial) aeadKey(s *suiteParams) []byte { return m.key[:s.keyLen] }
func (m *keyMaterial) hpKey(s *suiteParams) []byte   { return m.hp[:s.keyLen] }

// deriveKeyMaterial derives the packet keys of secret. A secret that is
// not of the suite's hash length is refused with ErrInvalidSecret.
func deriveKeyMaterial(s *suiteParams, vp *versionParams, secret []byte) (keyMaterial, error) {
	var m keyMaterial
	if len(secret) != s.hashLen {
		return m, ErrInvalidSecret
	}
	var e secretExpander
	if err := e.init(s, secret); err != nil {
		return m, err
	}
	if err := e.expand(m.aeadKey(s), vp.keyLabel); err != nil {
		return m, err
	}
	if err := e.expand(m.iv[:], vp.ivLabel); err != nil {
		return m, err
	}
	if err := e.expand(m.hpKey(s), vp.hpLabel); err != nil {
		return m, err
	}
	return m, nil
}

// initDirection derives secret's packet keys into the AEAD half pc and the
// header protector hp of one direction.
func initDirection(s *suiteParams, vp *versionParams, secret []byte, pc *packetCipher, hp *headerProtector) error {
	m, err := deriveKeyMaterial(s, vp, secret)
	if err != nil {
		return err
	}
	if err := hp.init(s, m.hpKey(s)); err != nil {
		return err
	}
	return pc.init(s, m.aeadKey(s), m.iv[:])
}

func nextSecret(s *suiteParams, vp *versionParams, secret []byte) ([]byte, error) {
	var e secretExpander
	if err := e.init(s, secret); err != nil {
		return nil, err
	}
	next := make([]byte, s.hashLen)
	if err := e.expand(next, vp.kuLabel); err != nil {
		return nil, err
	}
	return next, nil
}

// InitialSecrets derives the client and server Initial secrets from the
// Destination Connection ID of the client's first Initial packet
// (RFC 9001 section 5.2). Both use TLS_AES_128_GCM_SHA256.
func InitialSecrets(dcid []byte, v Version) (client, server []byte, err error) {
	_, c, s, err := initialSecrets(dcid, v)
	if err != nil {
		return nil, nil, err
	}
	buf := make([]byte, 0, 2*sha256.Size)
	buf = append(append(buf, c[:]...), s[:]...)
	return buf[:sha256.Size:sha256.Size], buf[sha256.Size:], nil
}

// initialSecrets is InitialSecrets on the stack: one HKDF-Extract, then
// both secrets expanded from the same pseudorandom key.
func initialSecrets(dcid []byte, v Version) (vp *versionParams, client, server [sha256.Size]byte, err error) {
	vp, err = paramsFor(v)
	if err != nil {
		return nil, client, server, err
	}
	if len(dcid) > MaxConnectionIDLen {
		return nil, client, server, ErrConnectionIDTooLong
	}
	initial := tlskdf.ExtractSHA256(vp.salt, dcid)
	var e tlskdf.ExpanderSHA256
	if err := e.Init(initial[:]); err != nil {
		return nil, client, server, err
	}
	if err := e.ExpandLabel(client[:], "client in", nil); err != nil {
		return nil, client, server, err
	}
	if err := e.ExpandLabel(server[:], "server in", nil); err != nil {
		return nil, client, server, err
	}
	return vp, client, server, nil
}

func lookup(suiteID uint16, secret []byte, v Version) (*suiteParams, *versionParams, error) {
	s, err := suiteByID(suiteID)
	if err != nil {
		return nil, nil, err
	}
	vp, err := paramsFor(v)
	if err != nil {
		return nil, nil, err
	}
	if len(secret) != s.hashLen {
		return nil, nil, ErrInvalidSecret
	}
	return s, vp, nil
}
