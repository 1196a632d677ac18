package handshake

import (
	"crypto/aes"
	"crypto/cipher"
	"sync"
)

// RetryIntegrityTagLen is the length of the Retry Integrity Tag.
const RetryIntegrityTagLen = 16

// minRetryLen is the shortest Retry packet without its tag: first byte,
// version, two connection ID length bytes and empty connection IDs.
const minRetryLen = 1 + 4 + 1 + 1

// retryAEADs are the fixed-key AES-128-GCM instances of RFC 9001 section
// 5.8 and RFC 9369 section 3.3.3, built once per process. cipher.AEAD from
// crypto/cipher is safe for concurrent use.
var retryAEADs = sync.OnceValues(func() ([2]cipher.AEAD, error) {
	var out [2]cipher.AEAD
	for i, vp := range []*versionParams{&v1Params, &v2Params} {
		block, err := aes.NewCipher(vp.retryKey)
		if err != nil {
			return out, err
		}
		if out[i], err = cipher.NewGCM(block); err != nil {
			return out, err
		}
	}
	return out, nil
})

// retryScratch holds a Retry pseudo-packet while the tag is computed;
// pooled so that tagging and verifying allocate nothing in steady state.
type retryScratch struct{ buf []byte }

var retryScratchPool = sync.Pool{New: func() any {
	return &retryScratch{buf: make([]byte, 0, 1+MaxConnectionIDLen+1500)}
}}

// maxPooledScratch bounds what goes back to the pool, so that one huge
// Retry does not pin a huge buffer.
const maxPooledScratch = 64 << 10

func retryAEAD(v Version) (cipher.AEAD, []byte, error) {
	vp, err := paramsFor(v)
	if err != nil {
		return nil, nil, err
	}
	aeads, err := retryAEADs()
	if err != nil {
		return nil, nil, err
	}
	if v == Version2 {
		return aeads[1], vp.retryNonce, nil
	}
	return aeads[0], vp.retryNonce, nil
}

// withPseudoPacket builds the Retry pseudo-packet (ODCID length, ODCID,
// then the Retry packet without its tag) and calls f with it.
func withPseudoPacket(odcid, retry []byte, f func(pseudo []byte)) {
	sc := retryScratchPool.Get().(*retryScratch)
	b := append(sc.buf[:0], byte(len(odcid)))
	b = append(b, odcid...)
	b = append(b, retry...)
	f(b)
	if cap(b) <= maxPooledScratch {
		sc.buf = b[:0]
		retryScratchPool.Put(sc)
	}
}

// AppendRetryIntegrityTag computes the Retry Integrity Tag of retry (a
// complete Retry packet of version v without its tag) for the client's
// original Destination Connection ID odcid, and returns retry with the tag
// appended; with 16 bytes of spare capacity in retry it does not allocate.
// Safe for concurrent use.
func AppendRetryIntegrityTag(retry []byte, v Version, odcid []byte) ([]byte, error) {
	if len(odcid) > MaxConnectionIDLen {
		return nil, ErrConnectionIDTooLong
	}
	if len(retry) < minRetryLen {
		return nil, ErrPacketTooShort
	}
	aead, nonce, err := retryAEAD(v)
	if err != nil {
		return nil, err
	}
	withPseudoPacket(odcid, retry, func(pseudo []byte) {
		retry = aead.Seal(retry, nonce, nil, pseudo)
	})
	return retry, nil
}

// VerifyRetryIntegrityTag checks the Retry Integrity Tag that ends
// retryPacket (a Retry packet of version v as received) against odcid,
// the Destination Connection ID of the client's first Initial. It returns
// nil, ErrRetryIntegrity, or an input error. Safe for concurrent use.
func VerifyRetryIntegrityTag(retryPacket []byte, v Version, odcid []byte) error {
	if len(odcid) > MaxConnectionIDLen {
		return ErrConnectionIDTooLong
	}
	if len(retryPacket) < minRetryLen+RetryIntegrityTagLen {
		return ErrPacketTooShort
	}
	aead, nonce, err := retryAEAD(v)
	if err != nil {
		return err
	}
	body := retryPacket[:len(retryPacket)-RetryIntegrityTagLen]
	tag := retryPacket[len(body):]
	var openErr error
	withPseudoPacket(odcid, body, func(pseudo []byte) {
		// The plaintext is empty, so Open only authenticates; a nil dst
		// keeps it allocation free.
		_, openErr = aead.Open(nil, nonce, tag, pseudo)
	})
	if openErr != nil {
		return ErrRetryIntegrity
	}
	return nil
}
