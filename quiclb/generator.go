package quiclb

import (
	"fmt"

	"github.com/turboretry/turboretry/quic"
)

// Generator makes one worker's connection IDs; it implements
// quic.ConnectionIDGenerator, so a quic.Transport issues only such IDs:
//
//	tr := &quic.Transport{Conn: conn, ConnectionIDGenerator: gen}
//
// A quic-go Transport takes it through an adapter of three lines that
// returns quic.ConnectionIDFromBytes(g.Append(nil)). Safe for concurrent
// use.
type Generator struct {
	c      *Codec
	worker int
}

// Generator returns the generator of worker's IDs (0..MaxWorkers-1).
func (c *Codec) Generator(worker int) (*Generator, error) {
	if worker < 0 || worker >= MaxWorkers {
		return nil, fmt.Errorf("quiclb: worker index %d outside 0..%d", worker, MaxWorkers-1)
	}
	return &Generator{c: c, worker: worker}, nil
}

// Worker returns the worker index the IDs carry.
func (g *Generator) Worker() int { return g.worker }

// Codec returns the generator's codec.
func (g *Generator) Codec() *Codec { return g.c }

// GenerateConnectionID returns a fresh ID.
func (g *Generator) GenerateConnectionID() (quic.ConnectionID, error) {
	var b [MaxLen]byte
	if err := g.c.Put(b[:g.c.n], g.worker); err != nil {
		return quic.ConnectionID{}, err
	}
	return quic.ConnectionIDFromBytes(b[:g.c.n]), nil
}

// ConnectionIDLen returns Codec.Len.
func (g *Generator) ConnectionIDLen() int { return g.c.n }

// Append appends a fresh ID to dst.
func (g *Generator) Append(dst []byte) ([]byte, error) { return g.c.Append(dst, g.worker) }

var _ quic.ConnectionIDGenerator = (*Generator)(nil)
