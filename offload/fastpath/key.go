package fastpath

import (
	"crypto/sha256"

	"github.com/turboretry/turboretry/internal/tlskdf"
	"github.com/turboretry/turboretry/token"
)

// keyLabel is the HKDF-Expand-Label label of the fast-path SipHash key.
const keyLabel = "fastpath key"

// DeriveKey returns the fast-path SipHash key derived from the root secret:
// HKDF-Expand-Label(root, "fastpath key", "", 16) with SHA-256, the same
// derivation the XDP loader and the DPA loader must use.
func DeriveKey(root []byte) Key {
	var k Key
	copy(k[:], tlskdf.ExpandLabel(sha256.New, root, keyLabel, nil, len(k)))
	return k
}

// KeyFromRing is DeriveKey for the root secret inside a token key ring, so
// that the agent, the stack and the XDP or DPA fast path of one deployment
// hash connection IDs alike.
func KeyFromRing(kr *token.KeyRing) Key {
	var k Key
	copy(k[:], kr.ExpandRoot(keyLabel, len(k)))
	return k
}
