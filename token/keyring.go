package token

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/tlskdf"
)

// DefaultRotation is the default epoch length (docs/design.md: 86400 s).
const DefaultRotation = 24 * time.Hour

// maxRotation keeps rotation in milliseconds far from int64 overflow.
const maxRotation = 100 * 365 * 24 * time.Hour

// KeyRing holds the root secret and derives the per-epoch keys from it. It
// is safe for concurrent use; the per-epoch keys are published through an
// atomic pointer, so the hot path takes no lock.
type KeyRing struct {
	root       [SecretLen]byte
	rotationMs int64

	mu    sync.Mutex                 // serializes derivation of new epochs
	table atomic.Pointer[epochTable] // copy-on-write, indexed by key id
}

// epochTable holds at most one epoch per key id. The accepted epochs e-1, e
// and e+1 always have distinct key ids, so 16 slots suffice.
type epochTable [16]*epochKeys

// epochKeys is everything derived once per epoch.
type epochKeys struct {
	epoch uint64
	psk   [32]byte // K_psk(e)
	// HMAC-SHA256 keyed with K_tid, precomputed: the SHA-256 states after
	// the inner and outer padded key blocks, so a TM costs two compressions.
	tidInner []byte
	tidOuter []byte
}

// NewKeyRing returns a key ring for a 32-byte root secret. rotation is the
// epoch length, a whole number of seconds; zero means DefaultRotation.
func NewKeyRing(root []byte, rotation time.Duration) (*KeyRing, error) {
	if len(root) != SecretLen {
		return nil, fmt.Errorf("token: root secret must be %d bytes, got %d", SecretLen, len(root))
	}
	if rotation == 0 {
		rotation = DefaultRotation
	}
	if rotation < time.Second || rotation > maxRotation || rotation%time.Second != 0 {
		return nil, fmt.Errorf("token: rotation period %v must be a whole number of seconds between 1s and %v", rotation, maxRotation)
	}
	kr := &KeyRing{rotationMs: rotation.Milliseconds()}
	copy(kr.root[:], root)
	kr.table.Store(new(epochTable))
	return kr, nil
}

// LoadKeyRing reads the root secret from a key file (see ReadSecretFile)
// and returns a key ring for it.
func LoadKeyRing(path string, rotation time.Duration) (*KeyRing, error) {
	s, err := ReadSecretFile(path)
	if err != nil {
		return nil, err
	}
	return NewKeyRing(s, rotation)
}

// Rotation returns the epoch length.
func (kr *KeyRing) Rotation() time.Duration {
	return time.Duration(kr.rotationMs) * time.Millisecond
}

// Epoch returns the epoch that contains t: floor(unix_seconds / rotation).
// Times before 1970 are in epoch 0.
func (kr *KeyRing) Epoch(t time.Time) uint64 { return kr.epochOfMs(t.UnixMilli()) }

func (kr *KeyRing) epochOfMs(ms int64) uint64 {
	if ms < 0 {
		return 0
	}
	return uint64(ms / kr.rotationMs)
}

// KeyID returns the key id of an epoch.
func KeyID(epoch uint64) uint8 { return uint8(epoch & 0x0f) }

// resolve maps a token's key id to the one accepted epoch (e-1, e or e+1,
// e the epoch of nowMs) that has this key id.
func (kr *KeyRing) resolve(keyID uint8, nowMs int64) (uint64, bool) {
	e := kr.epochOfMs(nowMs)
	for _, c := range [3]uint64{e, e + 1, e - 1} {
		if c == ^uint64(0) { // e-1 when e is 0
			continue
		}
		if KeyID(c) == keyID {
			return c, true
		}
	}
	return 0, false
}

// keys returns the keys of an epoch, deriving them on first use.
func (kr *KeyRing) keys(epoch uint64) (*epochKeys, error) {
	if ek := kr.table.Load()[epoch&15]; ek != nil && ek.epoch == epoch {
		return ek, nil
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	old := kr.table.Load()
	if ek := old[epoch&15]; ek != nil && ek.epoch == epoch {
		return ek, nil
	}
	ek, err := deriveEpochKeys(kr.root[:], epoch)
	if err != nil {
		return nil, err
	}
	next := *old
	next[epoch&15] = ek
	kr.table.Store(&next)
	return ek, nil
}

// EpochKey returns K_psk(epoch), for diagnostics and test vectors.
func (kr *KeyRing) EpochKey(epoch uint64) ([]byte, error) {
	ek, err := kr.keys(epoch)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), ek.psk[:]...), nil
}

func deriveEpochKeys(root []byte, epoch uint64) (*epochKeys, error) {
	var ctx [8]byte
	binary.BigEndian.PutUint64(ctx[:], epoch)
	ek := &epochKeys{epoch: epoch}
	copy(ek.psk[:], tlskdf.ExpandLabel(sha256.New, root, "turboretry epoch", ctx[:], 32))
	ktid := tlskdf.ExpandLabel(sha256.New, ek.psk[:], "tid key", nil, 32)
	var err error
	ek.tidInner, ek.tidOuter, err = hmacStates(ktid)
	if err != nil {
		return nil, err
	}
	return ek, nil
}

// ExpandRoot returns HKDF-Expand-Label(root, label, "", length) with
// SHA-256: a key for another component that shares the deployment's root
// secret (the fast-path cache's SipHash key, docs/design.md), derived without
// handing the root secret itself out.
func (kr *KeyRing) ExpandRoot(label string, length int) []byte {
	return tlskdf.ExpandLabel(sha256.New, kr.root[:], label, nil, length)
}
