package announce

import "github.com/turboretry/turboretry/token"

// KeyLabel is the HKDF-Expand-Label label of the control channel's MAC key.
const KeyLabel = "turboretry cid announce"

// Key derives the control channel's MAC key from the root secret in kr:
// HKDF-Expand-Label(root, KeyLabel, "", 32) with SHA-256. The host and the
// agent derive it from the same secret file. A nil kr yields the all-zero
// key, which NewAnnouncer and NewListener refuse.
func Key(kr *token.KeyRing) [32]byte {
	var k [32]byte
	if kr != nil {
		copy(k[:], kr.ExpandRoot(KeyLabel, len(k)))
	}
	return k
}
