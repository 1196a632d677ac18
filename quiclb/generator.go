package quiclb

import "fmt"

// Generator makes one worker's connection IDs. It is safe for concurrent
// use. A quic.Transport issues only its IDs with
//
//	tr.ConnectionIDGenerator = quic.ConnectionIDGeneratorFunc(gen.Len(), gen.Fill)
//
// (package quic's hook; quiclb itself does not import quic, so that the
// offload packages below quic can use the codec), and a quic-go Transport
// through an adapter whose GenerateConnectionID returns
// quic.ConnectionIDFromBytes(gen.Append(nil)).
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

// Len returns Codec.Len.
func (g *Generator) Len() int { return g.c.n }

// Fill writes a fresh ID into dst, which must be Len bytes long.
func (g *Generator) Fill(dst []byte) error { return g.c.Put(dst, g.worker) }

// Append appends a fresh ID to dst.
func (g *Generator) Append(dst []byte) ([]byte, error) { return g.c.Append(dst, g.worker) }
