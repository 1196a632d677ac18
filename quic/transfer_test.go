package quic

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// testData returns n deterministic pseudo-random bytes.
func testData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// rwStream is what the echo check needs of ours and quic-go's streams.
type rwStream interface {
	io.ReadWriteCloser
}

// echoCheck writes data on s while reading the echo, and compares.
func echoCheck(t *testing.T, s rwStream, data []byte) {
	t.Helper()
	if err := echoStream(s, data); err != nil {
		t.Fatal(err)
	}
}

// echoStream is echoCheck returning its failure.
func echoStream(s rwStream, data []byte) error {
	errc := make(chan error, 1)
	go func() {
		_, err := s.Write(data)
		if err == nil {
			err = s.Close()
		}
		errc <- err
	}()
	got, err := io.ReadAll(s)
	if err != nil {
		return fmt.Errorf("read after %d bytes: %w", len(got), err)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("echo mismatch: got %d bytes, want %d", len(got), len(data))
	}
	return nil
}

const bigTransfer = 10 << 20

func TestTransfer10MBOursToOurs(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, nil)
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(bigTransfer, 1))
}

func TestTransfer10MBOurClientQuicGoServer(t *testing.T) {
	ctx := testCtx(t)
	addr := quicgoEchoServer(t, ctx)
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(bigTransfer, 2))
}

func TestTransfer10MBQuicGoClientOurServer(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, nil)
	c, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(bigTransfer, 3))
}
