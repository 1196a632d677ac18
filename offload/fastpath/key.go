package fastpath

import (
	"crypto/sha256"

	"github.com/turboretry/turboretry/internal/tlskdf"
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
