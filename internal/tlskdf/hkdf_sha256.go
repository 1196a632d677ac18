package tlskdf

import (
	"crypto/sha256"
	"errors"
)

// Limits of the HkdfLabel structure (RFC 8446 section 7.1) and of
// HKDF-Expand (RFC 5869 section 2.3) with SHA-256.
const (
	labelPrefix = "tls13 "
	// MaxLabelLen is the longest label: "tls13 " plus the label must fit
	// in the structure's 255-byte label field.
	MaxLabelLen = 255 - len(labelPrefix)
	// MaxContextLen is the longest context HkdfLabel can carry.
	MaxContextLen = 255
	// MaxSHA256Len is the most output HKDF-Expand with SHA-256 can give.
	MaxSHA256Len = 255 * sha256.Size

	// maxHkdfLabelLen is the longest encoded HkdfLabel.
	maxHkdfLabelLen = 2 + 1 + len(labelPrefix) + MaxLabelLen + 1 + MaxContextLen
)

// Errors for arguments the HkdfLabel encoding or HKDF cannot carry, and
// for an ExpanderSHA256 used before Init.
var (
	ErrLabelTooLong   = errors.New("tlskdf: label longer than 249 bytes")
	ErrContextTooLong = errors.New("tlskdf: context longer than 255 bytes")
	ErrOutputTooLong  = errors.New("tlskdf: output longer than 255 hash blocks")
	ErrNotInitialized = errors.New("tlskdf: ExpanderSHA256 used before Init")
)

// ExtractSHA256 returns HKDF-Extract(salt, ikm) with SHA-256 (RFC 5869
// section 2.2), the pseudorandom key to expand. It does not allocate.
func ExtractSHA256(salt, ikm []byte) [sha256.Size]byte {
	return hmacSHA256(salt, ikm)
}

// ExpanderSHA256 derives several labels from one SHA-256 secret (a
// pseudorandom key) without allocating: QUIC Initial keys come from three
// secrets with two or three labels each, for every new connection. Init
// prepares the HMAC key once; each ExpandLabel then costs two SHA-256
// blocks per 32 bytes of output. The zero value must be Init'ed before
// use. An ExpanderSHA256 holds key material: keep it on the stack or
// clear it after use.
type ExpanderSHA256 struct {
	key hmacKeySHA256
}

// Init prepares e to expand secret. It fails only if the SHA-256
// implementation cannot save its state, which the standard library's can.
func (e *ExpanderSHA256) Init(secret []byte) error {
	return e.key.init(secret)
}

// ExpandLabel fills out with HKDF-Expand-Label(secret, label, context,
// len(out)) with SHA-256: the same bytes as ExpandLabel(sha256.New,
// secret, label, context, len(out)). It returns an error, leaving out
// untouched, when e was not initialized or when the label, the context or
// out is longer than the encoding allows.
func (e *ExpanderSHA256) ExpandLabel(out []byte, label string, context []byte) error {
	switch {
	case e.key.n == 0:
		return ErrNotInitialized
	case len(label) > MaxLabelLen:
		return ErrLabelTooLong
	case len(context) > MaxContextLen:
		return ErrContextTooLong
	case len(out) > MaxSHA256Len:
		return ErrOutputTooLong
	}
	var infoBuf [maxHkdfLabelLen]byte
	info := appendHkdfLabel(infoBuf[:0], len(out), label, context)
	// RFC 5869: T(0) is empty, T(i) = HMAC(PRK, T(i-1) || info || i), and
	// the output is the first len(out) bytes of T(1) || T(2) || ...
	var t [sha256.Size]byte
	prev := t[:0]
	for i, done := 1, 0; done < len(out); i++ {
		var err error
		if t, err = e.key.sum(prev, info, []byte{byte(i)}); err != nil {
			return err
		}
		done += copy(out[done:], t[:])
		prev = t[:]
	}
	return nil
}
