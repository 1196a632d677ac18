package quic

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

func TestConnectionIDValue(t *testing.T) {
	b := []byte{1, 2, 3, 4, 5}
	c := ConnectionIDFromBytes(b)
	b[0] = 9 // copied, not aliased
	if c.Len() != 5 || !bytes.Equal(c.Bytes(), []byte{1, 2, 3, 4, 5}) || c.String() != "0102030405" {
		t.Fatalf("got %v (len %d)", c, c.Len())
	}
	if c != ConnectionIDFromBytes([]byte{1, 2, 3, 4, 5}) {
		t.Fatal("equal IDs compare unequal")
	}
	// As in quic-go, the zero value is no ID; the empty ID is valid.
	var zero ConnectionID
	empty := ConnectionIDFromBytes(nil)
	if zero.Valid() || zero.Len() != 0 || len(zero.Bytes()) != 0 || zero.String() != "(invalid)" || zero == empty {
		t.Fatalf("zero value: %v", zero)
	}
	if !empty.Valid() || empty.Len() != 0 || empty.String() != "(empty)" {
		t.Fatalf("empty ID: %v", empty)
	}
	if c := ConnectionIDFromBytes(make([]byte, 20)); c.Len() != 20 {
		t.Fatalf("20 bytes: len %d", c.Len())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("ConnectionIDFromBytes accepted 21 bytes")
		}
	}()
	ConnectionIDFromBytes(make([]byte, 21))
}

// countingGenerator issues tag || counter IDs of length n and remembers
// them, so a test can tell its IDs from any other.
type countingGenerator struct {
	n   int
	tag byte
	// wrongLen, when set, makes every ID one byte short.
	wrongLen bool

	mu     sync.Mutex
	next   uint64
	issued map[string]bool
}

func (g *countingGenerator) GenerateConnectionID() (ConnectionID, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	b := make([]byte, g.n)
	b[0] = g.tag
	binary.BigEndian.PutUint64(b[len(b)-8:], g.next)
	if g.wrongLen {
		b = b[1:]
	}
	if g.issued == nil {
		g.issued = map[string]bool{}
	}
	g.issued[string(b)] = true
	return ConnectionIDFromBytes(b), nil
}

func (g *countingGenerator) ConnectionIDLen() int { return g.n }

func (g *countingGenerator) has(cid []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.issued[string(cid)]
}

// TestConnectionIDGeneratorMakesEveryID: with a generator on the server's
// Transport, quic-go's client is sent only the generator's IDs: the Retry's
// SCID (which becomes the client's DCID), the handshake SCID and every
// NEW_CONNECTION_ID, and the transfer works over them.
func TestConnectionIDGeneratorMakesEveryID(t *testing.T) {
	ctx := testCtx(t)
	gen := &countingGenerator{n: 11, tag: 0xab}
	var mu sync.Mutex
	var added [][]byte
	srv := &Transport{
		Conn:                  listenUDP(t),
		ConnectionIDLength:    4, // ignored: the generator's length wins
		ConnectionIDGenerator: gen,
		AddressValidation:     &AddressValidationConfig{Policy: AlwaysRetry()},
		ConnectionIDAdded: func(cid []byte) {
			mu.Lock()
			added = append(added, bytes.Clone(cid))
			mu.Unlock()
		},
	}
	defer srv.Close()
	ln, err := srv.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan *Conn, 1)
	serveStreams(ctx, func(ctx context.Context) (*Conn, error) {
		c, err := ln.Accept(ctx)
		if err == nil {
			conns <- c
		}
		return c, err
	}, func(s *Stream) { echo(s) })
	qt := &quicgo.Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	defer qt.Close()
	qc, err := qt.Dial(ctx, ln.Addr(), clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	sc := <-conns
	if st := sc.ConnectionState(); st.ValidatedBy != TokenRetry {
		t.Fatalf("connection validated by %v, want a Retry", st.ValidatedBy)
	}
	s, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(256<<10, 3))
	waitCIDs(t, ctx, sc, sc.cids.dest, settled)
	if !gen.has(sc.cids.src) {
		t.Fatalf("handshake SCID %x is not the generator's", sc.cids.src)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(added) < 2+maxIssuedCIDs {
		t.Fatalf("ConnectionIDAdded saw %d IDs, want at least %d", len(added), 2+maxIssuedCIDs)
	}
	for _, cid := range added {
		// With AlwaysRetry the client's first routed DCID is the Retry's
		// SCID: the generator's as well.
		if !gen.has(cid) {
			t.Errorf("routed ID %x was not made by the generator", cid)
		}
	}
}

func TestConnectionIDGeneratorErrors(t *testing.T) {
	srv := &Transport{Conn: listenUDP(t), ConnectionIDGenerator: &countingGenerator{n: 21}}
	if _, err := srv.Listen(serverTLS(t), nil); err == nil {
		t.Fatal("Listen accepted a generator of 21-byte IDs")
	}
	// A generator whose IDs are not ConnectionIDLen long cannot make a
	// connection: the handshake fails instead of issuing a misrouted ID.
	gen, _, err := appConnIDGenerator(&countingGenerator{n: 8, wrongLen: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.New(); !errors.Is(err, errGeneratorLength) {
		t.Fatalf("wrong-length ID: err = %v", err)
	}
}

func TestConnectionIDGeneratorFunc(t *testing.T) {
	n := byte(0)
	g := ConnectionIDGeneratorFunc(6, func(dst []byte) error {
		n++
		for i := range dst {
			dst[i] = n
		}
		if n == 2 {
			return errGeneratorLength
		}
		return nil
	})
	if id, err := g.GenerateConnectionID(); err != nil || id.String() != "010101010101" || g.ConnectionIDLen() != 6 {
		t.Fatalf("%v, %v", id, err)
	}
	if _, err := g.GenerateConnectionID(); !errors.Is(err, errGeneratorLength) {
		t.Fatalf("fill's error lost: %v", err)
	}
	if _, err := ConnectionIDGeneratorFunc(21, func([]byte) error { return nil }).GenerateConnectionID(); err == nil {
		t.Fatal("length 21 accepted")
	}
}
