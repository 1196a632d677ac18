package connid

import (
	"bytes"
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/qerr"
)

// wantCode fails unless err is a *qerr.TransportError with code and frame type.
func wantCode(t *testing.T, err error, code qerr.TransportErrorCode, frameType uint64) {
	t.Helper()
	var te *qerr.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("error %v is not a *qerr.TransportError", err)
	}
	if te.Code != code || te.FrameType != frameType {
		t.Fatalf("got %v frame 0x%x, want %v frame 0x%x", te.Code, te.FrameType, code, frameType)
	}
}

func mustCID(t testing.TB, b []byte) ConnectionID {
	t.Helper()
	c, err := FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConnectionIDBasics(t *testing.T) {
	raw := []byte{0xde, 0xad, 0xbe, 0xef}
	c := mustCID(t, raw)
	if c.Len() != 4 || c.String() != "deadbeef" || !c.Equal(raw) || c.Equal(raw[:3]) {
		t.Fatalf("bad ID %v len %d", c, c.Len())
	}
	b := c.Bytes()
	b[0] = 0
	if !c.Equal(raw) {
		t.Fatal("Bytes aliases the ID")
	}
	if got := c.AppendTo([]byte{1}); !bytes.Equal(got, []byte{1, 0xde, 0xad, 0xbe, 0xef}) {
		t.Fatalf("AppendTo = %x", got)
	}
	raw[0] = 0
	if c.String() != "deadbeef" {
		t.Fatal("FromBytes does not copy")
	}
	var empty ConnectionID
	if empty.Len() != 0 || empty.String() != "" || !empty.Equal(nil) {
		t.Fatal("zero value is not the empty ID")
	}
}

func TestConnectionIDMapKey(t *testing.T) {
	m := map[ConnectionID]int{}
	m[mustCID(t, []byte{1, 2, 3})] = 1
	m[mustCID(t, []byte{1, 2, 3, 0})] = 2 // trailing zero: a different ID
	if m[mustCID(t, []byte{1, 2, 3})] != 1 || len(m) != 2 {
		t.Fatalf("map = %v", m)
	}
}

func TestFromBytesTooLong(t *testing.T) {
	if _, err := FromBytes(make([]byte, MaxLen)); err != nil {
		t.Fatal(err)
	}
	if _, err := FromBytes(make([]byte, MaxLen+1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("err = %v", err)
	}
}
