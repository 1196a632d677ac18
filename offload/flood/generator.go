package flood

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/turboretry/turboretry/offload/frame"
)

// DefaultPoolSize is the number of pre-built Initials a Generator cycles
// through in pool mode.
const DefaultPoolSize = 1024

// MaxPoolSize bounds the pool (about 1.2 MB per 1000 packets).
const MaxPoolSize = 1 << 20

// GeneratorConfig configures NewGenerator. The zero value is valid: QUIC v1,
// 8-byte DCIDs and SCIDs, a pool of DefaultPoolSize packets.
type GeneratorConfig struct {
	// Version is the QUIC version (0: Version1).
	Version Version
	// DCIDLen is the Destination Connection ID length, 8 to 20
	// (0: DefaultDCIDLen).
	DCIDLen int
	// SCIDLen is the Source Connection ID length, 1 to 20
	// (0: DefaultSCIDLen).
	SCIDLen int
	// PoolSize is the number of pre-built packets (0: DefaultPoolSize).
	PoolSize int
	// Reprotect builds a fresh packet (new DCID and SCID, new keys) for
	// every call instead of cycling through the pool.
	Reprotect bool
	// ServerName is the SNI of the ClientHellos (empty: DefaultServerName).
	ServerName string
	// Seed fixes the random connection IDs (nil: seeded from crypto/rand).
	// The ClientHello randomness always comes from crypto/tls.
	Seed *[32]byte
}

// Generator produces valid client Initial packets (UDP payloads of
// UDPPayloadSize bytes). It is not safe for concurrent use.
type Generator struct {
	v         Version
	dcidLen   int
	scidLen   int
	reprotect bool
	rng       *rand.ChaCha8

	pool [][]byte // pool mode
	sums []uint32 // frame.PayloadSum of the pool entries, for FrameSource
	next int

	hello []byte // re-protect mode
	cids  [2 * MaxCIDLen]byte
}

// NewGenerator validates cfg and builds the packet pool (or, in re-protect
// mode, one ClientHello).
func NewGenerator(cfg GeneratorConfig) (*Generator, error) {
	g := &Generator{v: cfg.Version, dcidLen: cfg.DCIDLen, scidLen: cfg.SCIDLen, reprotect: cfg.Reprotect}
	if g.v == 0 {
		g.v = Version1
	}
	if !g.v.IsSupported() {
		return nil, fmt.Errorf("%w: %v", ErrVersion, g.v)
	}
	if g.dcidLen == 0 {
		g.dcidLen = DefaultDCIDLen
	}
	if g.scidLen == 0 {
		g.scidLen = DefaultSCIDLen
	}
	if g.dcidLen < MinDCIDLen || g.dcidLen > MaxCIDLen {
		return nil, fmt.Errorf("%w: DCID length %d, want %d to %d", ErrConnIDLength, g.dcidLen, MinDCIDLen, MaxCIDLen)
	}
	if g.scidLen < 1 || g.scidLen > MaxCIDLen {
		return nil, fmt.Errorf("%w: SCID length %d, want 1 to %d", ErrConnIDLength, g.scidLen, MaxCIDLen)
	}
	size := cfg.PoolSize
	if size == 0 {
		size = DefaultPoolSize
	}
	if size < 0 || size > MaxPoolSize {
		return nil, fmt.Errorf("flood: pool size %d out of range 1 to %d", size, MaxPoolSize)
	}
	var seed [32]byte
	if cfg.Seed != nil {
		seed = *cfg.Seed
	} else if _, err := crand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("flood: seeding: %w", err)
	}
	g.rng = rand.NewChaCha8(seed)

	if g.reprotect {
		// The SCID in this ClientHello's transport parameters will not match
		// the per-packet SCIDs; see the package documentation.
		hello, err := ClientHello(cfg.ServerName, g.v, g.randomCIDs()[g.dcidLen:])
		if err != nil {
			return nil, err
		}
		if err := checkInitialArgs(g.v, make([]byte, g.dcidLen), make([]byte, g.scidLen), hello); err != nil {
			return nil, err
		}
		g.hello = hello
		return g, nil
	}

	// One backing array keeps the pool compact in memory.
	backing := make([]byte, 0, size*UDPPayloadSize)
	g.pool = make([][]byte, size)
	g.sums = make([]uint32, size)
	seen := make(map[string]bool, size)
	for i := range size {
		cids := g.randomCIDs()
		dcid, scid := cids[:g.dcidLen], cids[g.dcidLen:]
		if seen[string(dcid)] {
			// 64 random bits or more: a repeat means a broken generator.
			return nil, errors.New("flood: random DCID repeated")
		}
		seen[string(dcid)] = true
		hello, err := ClientHello(cfg.ServerName, g.v, scid)
		if err != nil {
			return nil, err
		}
		start := len(backing)
		if backing, err = AppendInitial(backing, g.v, dcid, scid, hello); err != nil {
			return nil, err
		}
		g.pool[i] = backing[start:len(backing):len(backing)]
		g.sums[i] = frame.PayloadSum(g.pool[i])
	}
	return g, nil
}

// randomCIDs fills g.cids with a fresh DCID followed by a fresh SCID.
func (g *Generator) randomCIDs() []byte {
	b := g.cids[:g.dcidLen+g.scidLen]
	_, _ = g.rng.Read(b) // ChaCha8.Read never fails
	return b
}

// Version returns the QUIC version of the generated packets.
func (g *Generator) Version() Version { return g.v }

// Reprotect reports whether every packet is built afresh.
func (g *Generator) Reprotect() bool { return g.reprotect }

// PoolSize returns the number of pre-built packets (0 in re-protect mode).
func (g *Generator) PoolSize() int { return len(g.pool) }

// Entry returns pool entry i (0 <= i < PoolSize) and its unfolded
// checksum sum (frame.PayloadSum), for senders that load the pool
// elsewhere (offload/flood/live copies it into a BPF map). The packet is
// shared and must not be modified. It panics outside the pool, like an
// index out of range.
func (g *Generator) Entry(i int) (pkt []byte, sum uint32) { return g.pool[i], g.sums[i] }

// Next returns the next Initial. In pool mode it is the next pool entry,
// shared and not to be modified, and buf is unused; in re-protect mode the
// packet is built into buf[:0] (give it UDPPayloadSize bytes of capacity
// to avoid an allocation).
func (g *Generator) Next(buf []byte) ([]byte, error) {
	p, _, _, err := g.nextWithSum(buf)
	return p, err
}

// nextWithSum is Next that also returns the packet's unfolded checksum
// sum (frame.PayloadSum) when it is known in advance, as for pool entries.
func (g *Generator) nextWithSum(buf []byte) (pkt []byte, sum uint32, haveSum bool, err error) {
	if !g.reprotect {
		i := g.next
		g.next++
		if g.next == len(g.pool) {
			g.next = 0
		}
		return g.pool[i], g.sums[i], true, nil
	}
	pkt, err = g.build(buf)
	return pkt, 0, false, err
}

// build makes a fresh Initial into buf[:0] in re-protect mode.
func (g *Generator) build(buf []byte) ([]byte, error) {
	cids := g.randomCIDs()
	dcid, scid := cids[:g.dcidLen], cids[g.dcidLen:]
	s, err := clientSealer(g.v, dcid)
	if err != nil {
		return nil, err
	}
	return appendInitial(buf[:0], s, g.v, dcid, scid, g.hello)
}
