package quiclb

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
	c                  *Codec
	generation, worker int
}

// Generator returns the generator of worker's IDs (0..MaxWorkers-1) of
// generation 0.
func (c *Codec) Generator(worker int) (*Generator, error) { return c.GeneratorOf(0, worker) }

// GeneratorOf returns the generator of worker's IDs of generation
// (0..Generations-1): what a restarted server's workers issue.
func (c *Codec) GeneratorOf(generation, worker int) (*Generator, error) {
	if _, err := workerOctet(generation, worker); err != nil {
		return nil, err
	}
	return &Generator{c: c, generation: generation, worker: worker}, nil
}

// Worker returns the worker index the IDs carry.
func (g *Generator) Worker() int { return g.worker }

// Generation returns the generation the IDs carry.
func (g *Generator) Generation() int { return g.generation }

// Codec returns the generator's codec.
func (g *Generator) Codec() *Codec { return g.c }

// Len returns Codec.Len.
func (g *Generator) Len() int { return g.c.n }

// Fill writes a fresh ID into dst, which must be Len bytes long.
func (g *Generator) Fill(dst []byte) error { return g.c.PutGeneration(dst, g.generation, g.worker) }

// Append appends a fresh ID to dst.
func (g *Generator) Append(dst []byte) ([]byte, error) {
	return g.c.AppendGeneration(dst, g.generation, g.worker)
}
