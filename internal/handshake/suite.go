package handshake

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

// AEAD usage limits of RFC 9001 section 6.6, in packets. The
// confidentiality limit bounds packets sealed with one key (initiate a key
// update before reaching it); the integrity limit bounds packets that fail
// authentication over a whole connection, across all keys (close the
// connection with AEAD_LIMIT_REACHED when it is exceeded).
const (
	AESGCMConfidentialityLimit uint64 = 1 << 23
	AESGCMIntegrityLimit       uint64 = 1 << 52
	// ChaCha20-Poly1305's confidentiality limit exceeds the 2^62 packet
	// numbers a connection can use, so it never triggers.
	ChaCha20ConfidentialityLimit uint64 = 1 << 62
	ChaCha20IntegrityLimit       uint64 = 1 << 36
)

// suiteParams describes one TLS 1.3 cipher suite as QUIC uses it.
type suiteParams struct {
	id        uint16
	keyLen    int // AEAD key and header protection key length
	hashLen   int
	newHash   func() hash.Hash
	chacha    bool
	confLimit uint64
	intLimit  uint64
}

var (
	suiteAES128 = suiteParams{id: tls.TLS_AES_128_GCM_SHA256, keyLen: 16, hashLen: 32, newHash: sha256.New,
		confLimit: AESGCMConfidentialityLimit, intLimit: AESGCMIntegrityLimit}
	suiteAES256 = suiteParams{id: tls.TLS_AES_256_GCM_SHA384, keyLen: 32, hashLen: 48, newHash: sha512.New384,
		confLimit: AESGCMConfidentialityLimit, intLimit: AESGCMIntegrityLimit}
	suiteChaCha = suiteParams{id: tls.TLS_CHACHA20_POLY1305_SHA256, keyLen: 32, hashLen: 32, newHash: sha256.New,
		chacha: true, confLimit: ChaCha20ConfidentialityLimit, intLimit: ChaCha20IntegrityLimit}
)

func suiteByID(id uint16) (*suiteParams, error) {
	switch id {
	case tls.TLS_AES_128_GCM_SHA256:
		return &suiteAES128, nil
	case tls.TLS_AES_256_GCM_SHA384:
		return &suiteAES256, nil
	case tls.TLS_CHACHA20_POLY1305_SHA256:
		return &suiteChaCha, nil
	}
	return nil, fmt.Errorf("%w: %#04x", ErrUnsupportedCipherSuite, id)
}

func (s *suiteParams) newAEAD(key []byte) (cipher.AEAD, error) {
	if s.chacha {
		return chacha20poly1305.New(key)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// secretExpander derives labels from one traffic secret with the suite's
// hash. The SHA-256 suites, Initial keys among them, go through tlskdf's
// allocation-free expander, which prepares the HMAC key once for all
// labels; SHA-384 goes through crypto/hkdf and allocates.
type secretExpander struct {
	suite  *suiteParams
	sha256 tlskdf.ExpanderSHA256
	secret []byte // SHA-384 only
}

func (e *secretExpander) init(s *suiteParams, secret []byte) error {
	e.suite = s
	if s.hashLen == sha256.Size {
		return e.sha256.Init(secret)
	}
	// crypto/hkdf keeps the key behind interfaces, which would make every
	// caller's secret escape to the heap, the Initial secrets included;
	// handing it a copy confines that cost to this path.
	e.secret = append([]byte(nil), secret...)
	return nil
}

// expand fills out with HKDF-Expand-Label(secret, label, "", len(out)).
func (e *secretExpander) expand(out []byte, label string) error {
	if e.suite.hashLen == sha256.Size {
		return e.sha256.ExpandLabel(out, label, nil)
	}
	copy(out, tlskdf.ExpandLabel(e.suite.newHash, e.secret, label, nil, len(out)))
	return nil
}
