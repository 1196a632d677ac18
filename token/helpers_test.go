package token

import (
	"crypto/sha256"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

// expandForTest derives K_tid from K_psk independently of deriveEpochKeys.
func expandForTest(psk []byte) []byte {
	return tlskdf.ExpandLabel(sha256.New, psk, "tid key", nil, 32)
}
