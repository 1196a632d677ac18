package connid

import (
	"bufio"
	"crypto/rand"
	"errors"
	"io"
	"sync"

	"github.com/turboretry/turboretry/internal/protocol"
)

// DefaultLen is the length of the connection IDs this stack issues unless
// configured otherwise; the fast-path cache keys on it (docs/design.md).
const DefaultLen = 8

// randBufferSize is how many random bytes one read from the system source
// provides: 204 eight-byte IDs per getrandom call.
const randBufferSize = 2048

// ErrBadLength is returned by NewGenerator for a length outside 0..protocol.MaxConnectionIDLen.
var ErrBadLength = errors.New("connid: connection ID length must be 0..20")

// Generator makes random connection IDs of one length. Random bytes come
// from crypto/rand through a buffer, so a new ID rarely costs a system
// call. It is safe for concurrent use.
type Generator struct {
	length int
	// fill, when set, writes a whole ID (an application's generator)
	// instead of random bytes from r.
	fill func(dst []byte) error

	mu      sync.Mutex
	r       *bufio.Reader
	scratch [protocol.MaxConnectionIDLen]byte
}

// NewGenerator returns a Generator of IDs of the given length (0..protocol.MaxConnectionIDLen).
// A length of 0 means the endpoint uses zero-length connection IDs.
func NewGenerator(length int) (*Generator, error) {
	return NewGeneratorFrom(length, rand.Reader)
}

// NewGeneratorFrom is NewGenerator reading randomness from r instead of
// crypto/rand; tests use it for reproducible IDs.
func NewGeneratorFrom(length int, r io.Reader) (*Generator, error) {
	if length < 0 || length > protocol.MaxConnectionIDLen {
		return nil, ErrBadLength
	}
	return &Generator{length: length, r: bufio.NewReaderSize(r, randBufferSize)}, nil
}

// NewGeneratorFunc returns a Generator of IDs of the given length
// (0..protocol.MaxConnectionIDLen) that fill writes: it must fill all of dst, which is the
// length long, or return an error. fill may be called concurrently: it
// runs without a lock of the Generator's.
func NewGeneratorFunc(length int, fill func(dst []byte) error) (*Generator, error) {
	if length < 0 || length > protocol.MaxConnectionIDLen || fill == nil {
		return nil, ErrBadLength
	}
	return &Generator{length: length, fill: fill}, nil
}

// Len returns the length of the IDs g makes.
func (g *Generator) Len() int { return g.length }

// New returns a fresh random connection ID. The error is that of the
// random source, which crypto/rand never returns in practice.
func (g *Generator) New() (protocol.ConnectionID, error) {
	if g.length == 0 {
		return protocol.ConnectionIDFromBytes(nil), nil
	}
	if g.fill != nil {
		// The application's code, which must be safe for concurrent
		// use: called without g.mu, into a buffer of its own (which
		// escapes; IDs are made a few times per connection).
		buf := make([]byte, g.length)
		if err := g.fill(buf); err != nil {
			return protocol.ConnectionID{}, err
		}
		return protocol.ConnectionIDFromBytes(buf), nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// Reading into the Generator's own array rather than into a local
	// one keeps the ID on the caller's stack: an io.Reader would make it
	// escape.
	if _, err := io.ReadFull(g.r, g.scratch[:g.length]); err != nil {
		return protocol.ConnectionID{}, err
	}
	return protocol.ConnectionIDFromBytes(g.scratch[:g.length]), nil
}
