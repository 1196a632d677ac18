package handshake

import (
	"crypto/hkdf"
	"crypto/sha256"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

// ivLen is the AEAD nonce length of every QUIC cipher suite.
const ivLen = 12

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
	return derivePacketKeys(s, vp, secret), nil
}

func derivePacketKeys(s *suiteParams, vp *versionParams, secret []byte) PacketKeys {
	return PacketKeys{
		Key: tlskdf.ExpandLabel(s.newHash, secret, vp.keyLabel, nil, s.keyLen),
		IV:  tlskdf.ExpandLabel(s.newHash, secret, vp.ivLabel, nil, ivLen),
		HP:  tlskdf.ExpandLabel(s.newHash, secret, vp.hpLabel, nil, s.keyLen),
	}
}

// deriveProtection derives the packet keys of secret and builds their
// header protector, the part sealers and openers share. A secret that is
// not of the suite's hash length is refused with ErrInvalidSecret.
func deriveProtection(s *suiteParams, vp *versionParams, secret []byte) (PacketKeys, *headerProtector, error) {
	if len(secret) != s.hashLen {
		return PacketKeys{}, nil, ErrInvalidSecret
	}
	keys := derivePacketKeys(s, vp, secret)
	hp, err := newHeaderProtector(s, keys.HP)
	return keys, hp, err
}

// NextSecret derives the traffic secret of the next key phase
// (RFC 9001 section 6.1: "quic ku", RFC 9369: "quicv2 ku").
func NextSecret(suiteID uint16, secret []byte, v Version) ([]byte, error) {
	s, vp, err := lookup(suiteID, secret, v)
	if err != nil {
		return nil, err
	}
	return nextSecret(s, vp, secret), nil
}

func nextSecret(s *suiteParams, vp *versionParams, secret []byte) []byte {
	return tlskdf.ExpandLabel(s.newHash, secret, vp.kuLabel, nil, s.hashLen)
}

// InitialSecrets derives the client and server Initial secrets from the
// Destination Connection ID of the client's first Initial packet
// (RFC 9001 section 5.2). Both use TLS_AES_128_GCM_SHA256.
func InitialSecrets(dcid []byte, v Version) (client, server []byte, err error) {
	vp, err := paramsFor(v)
	if err != nil {
		return nil, nil, err
	}
	if len(dcid) > MaxConnectionIDLen {
		return nil, nil, ErrConnectionIDTooLong
	}
	initial, err := hkdf.Extract(sha256.New, dcid, vp.salt)
	if err != nil {
		return nil, nil, err
	}
	client = tlskdf.ExpandLabel(sha256.New, initial, "client in", nil, sha256.Size)
	server = tlskdf.ExpandLabel(sha256.New, initial, "server in", nil, sha256.Size)
	return client, server, nil
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
