package quic

import (
	"errors"
	"fmt"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/quic/quictype"
)

// maxConnectionIDLen is the longest connection ID QUIC version 1 allows
// (RFC 9000 section 17.2).
const maxConnectionIDLen = quictype.MaxConnectionIDLen

// A ConnectionID is a QUIC connection ID of 0 to 20 bytes (RFC 9000),
// held by value: it is comparable and copying it never allocates. As in
// quic-go, the zero value is not a connection ID (Valid reports false);
// ConnectionIDFromBytes(nil) is the zero-length ID.
type ConnectionID = quictype.ConnectionID

// ConnectionIDFromBytes returns the ConnectionID with the bytes of b
// (copied). It panics if b is longer than 20 bytes.
func ConnectionIDFromBytes(b []byte) ConnectionID { return quictype.ConnectionIDFromBytes(b) }

// A ConnectionIDGenerator makes the connection IDs a Transport issues
// (Transport.ConnectionIDGenerator): the handshake Source Connection ID,
// every NEW_CONNECTION_ID, and a Retry's Source Connection ID. Routing
// information in them lets a load balancer or an sk_reuseport program send
// a connection's packets to the server, or the worker, that holds it
// (package quiclb makes QUIC-LB IDs). It must be safe for concurrent use.
// It is called without any lock of ours held: a connection keeps a few IDs
// made ahead (up to 4 more than it issued) and issues from them.
type ConnectionIDGenerator interface {
	// GenerateConnectionID returns a new connection ID of exactly
	// ConnectionIDLen bytes. IDs must be unique, and an observer must not
	// be able to link two IDs of one connection (RFC 9000 section 5.1).
	GenerateConnectionID() (ConnectionID, error)
	// ConnectionIDLen returns the constant length of the IDs, 0 to 20;
	// 0 only for an endpoint that never needs to tell its connections
	// apart by ID.
	ConnectionIDLen() int
}

// errGeneratorLength is returned when a ConnectionIDGenerator returns an
// ID of another length than its ConnectionIDLen.
var errGeneratorLength = errors.New("quic: ConnectionIDGenerator returned an ID of the wrong length")

// appConnIDGenerator wraps the application's generator in the internal one
// the connections draw their IDs from.
func appConnIDGenerator(g ConnectionIDGenerator) (*connid.Generator, int, error) {
	n := g.ConnectionIDLen()
	if n < 0 || n > maxConnectionIDLen {
		return nil, 0, fmt.Errorf("quic: ConnectionIDGenerator.ConnectionIDLen() = %d, want 0..%d", n, maxConnectionIDLen)
	}
	gen, err := connid.NewGeneratorFunc(n, func(dst []byte) error {
		id, err := g.GenerateConnectionID()
		if err != nil {
			return err
		}
		if id.Len() != len(dst) {
			return fmt.Errorf("%w: %d bytes, want %d", errGeneratorLength, id.Len(), len(dst))
		}
		copy(dst, id.Bytes())
		return nil
	})
	return gen, n, err
}

// ConnectionIDGeneratorFunc returns the ConnectionIDGenerator of IDs of
// length n (0..20) that fill writes into a buffer of n bytes; fill must be
// safe for concurrent use. It adapts generators that know nothing of this
// package, such as quiclb.Generator:
//
//	tr.ConnectionIDGenerator = quic.ConnectionIDGeneratorFunc(gen.Len(), gen.Fill)
func ConnectionIDGeneratorFunc(n int, fill func(dst []byte) error) ConnectionIDGenerator {
	return funcGenerator{n: n, fill: fill}
}

type funcGenerator struct {
	n    int
	fill func(dst []byte) error
}

func (g funcGenerator) GenerateConnectionID() (ConnectionID, error) {
	if g.n < 0 || g.n > maxConnectionIDLen {
		return ConnectionID{}, fmt.Errorf("quic: connection ID length %d, want 0..%d", g.n, maxConnectionIDLen)
	}
	var b [maxConnectionIDLen]byte
	if err := g.fill(b[:g.n]); err != nil {
		return ConnectionID{}, err
	}
	return ConnectionIDFromBytes(b[:g.n]), nil
}

func (g funcGenerator) ConnectionIDLen() int { return g.n }
