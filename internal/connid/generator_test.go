package connid

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
)

func TestGeneratorLengths(t *testing.T) {
	for n := 0; n <= protocol.MaxConnectionIDLen; n++ {
		g, err := NewGenerator(n)
		if err != nil {
			t.Fatal(err)
		}
		c, err := g.New()
		if err != nil || !c.Valid() || c.Len() != n || g.Len() != n {
			t.Fatalf("len %d: got %d, %v", n, c.Len(), err)
		}
	}
	for _, n := range []int{-1, protocol.MaxConnectionIDLen + 1} {
		if _, err := NewGenerator(n); !errors.Is(err, ErrBadLength) {
			t.Fatalf("length %d: err = %v", n, err)
		}
	}
}

func TestGeneratorUnique(t *testing.T) {
	g, _ := NewGenerator(DefaultLen)
	seen := map[protocol.ConnectionID]bool{}
	for range 10000 {
		c, err := g.New()
		if err != nil {
			t.Fatal(err)
		}
		if seen[c] {
			t.Fatalf("duplicate ID %v", c)
		}
		seen[c] = true
	}
}

func TestGeneratorReadsSource(t *testing.T) {
	src := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 4)
	g, _ := NewGeneratorFrom(8, bytes.NewReader(src))
	for range 4 {
		c, err := g.New()
		if err != nil || c.String() != "0102030405060708" {
			t.Fatalf("got %v, %v", c, err)
		}
	}
	// The source is exhausted: the error comes back, with no ID.
	c, err := g.New()
	if !errors.Is(err, io.EOF) || c.Len() != 0 {
		t.Fatalf("got %v, %v", c, err)
	}
}

func TestGeneratorAllocs(t *testing.T) {
	g, _ := NewGenerator(DefaultLen)
	var sink protocol.ConnectionID
	if n := testing.AllocsPerRun(1000, func() { sink, _ = g.New() }); n != 0 {
		t.Fatalf("New allocates %v times", n)
	}
	_ = sink
}

// One Generator serves every connection of a Transport; run with -race.
func TestGeneratorConcurrent(t *testing.T) {
	g, _ := NewGenerator(DefaultLen)
	var wg sync.WaitGroup
	ids := make([][]protocol.ConnectionID, 4)
	for w := range ids {
		wg.Go(func() {
			for range 500 {
				c, err := g.New()
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], c)
			}
		})
	}
	wg.Wait()
	seen := map[protocol.ConnectionID]bool{}
	for _, l := range ids {
		for _, c := range l {
			if seen[c] {
				t.Fatalf("duplicate ID %v across goroutines", c)
			}
			seen[c] = true
		}
	}
}

func TestGeneratorFunc(t *testing.T) {
	n := byte(0)
	g, err := NewGeneratorFunc(4, func(dst []byte) error {
		n++
		if n == 3 {
			return io.ErrUnexpectedEOF
		}
		for i := range dst {
			dst[i] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"01010101", "02020202"} {
		if c, err := g.New(); err != nil || c.String() != want {
			t.Fatalf("got %v, %v; want %s", c, err, want)
		}
	}
	if c, err := g.New(); !errors.Is(err, io.ErrUnexpectedEOF) || c.Len() != 0 {
		t.Fatalf("failing fill: %v, %v", c, err)
	}
	if _, err := NewGeneratorFunc(protocol.MaxConnectionIDLen+1, func([]byte) error { return nil }); !errors.Is(err, ErrBadLength) {
		t.Fatalf("length 21: %v", err)
	}
	if _, err := NewGeneratorFunc(8, nil); !errors.Is(err, ErrBadLength) {
		t.Fatalf("nil fill: %v", err)
	}
}

// TestGeneratorFuncWithoutLock: the application's fill runs without the
// Generator's lock, so it may use the Generator itself (with fill under
// the lock, the nested New never returned).
func TestGeneratorFuncWithoutLock(t *testing.T) {
	var g *Generator
	depth := 0
	g, err := NewGeneratorFunc(4, func(dst []byte) error {
		depth++
		if depth == 1 {
			inner, err := g.New()
			if err != nil {
				return err
			}
			copy(dst, inner.Bytes())
			return nil
		}
		copy(dst, "abcd")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := g.New(); err != nil || string(c.Bytes()) != "abcd" {
		t.Fatalf("got %v, %v", c, err)
	}
}
