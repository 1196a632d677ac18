package protocol

import (
	"bytes"
	"errors"
	"testing"
)

func TestConnectionIDBasics(t *testing.T) {
	raw := []byte{0xde, 0xad, 0xbe, 0xef}
	c := ConnectionIDFromBytes(raw)
	if !c.Valid() || c.Len() != 4 || c.String() != "deadbeef" || !c.Equal(raw) || c.Equal(raw[:3]) {
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
		t.Fatal("ConnectionIDFromBytes does not copy")
	}
}

// TestConnectionIDZeroValue: as in quic-go, the zero value is no ID, and
// the zero-length ID is a different, valid one.
func TestConnectionIDZeroValue(t *testing.T) {
	var zero ConnectionID
	empty := ConnectionIDFromBytes(nil)
	if zero.Valid() || zero.Len() != 0 || zero.String() != "(invalid)" || !zero.Equal(nil) {
		t.Errorf("zero value: valid %v len %d %q", zero.Valid(), zero.Len(), zero)
	}
	if !empty.Valid() || empty.Len() != 0 || empty.String() != "(empty)" || !empty.Equal(nil) {
		t.Errorf("zero-length ID: valid %v len %d %q", empty.Valid(), empty.Len(), empty)
	}
	if zero == empty {
		t.Error("the zero value equals the zero-length ID")
	}
}

func TestConnectionIDMapKey(t *testing.T) {
	m := map[ConnectionID]int{}
	m[ConnectionIDFromBytes([]byte{1, 2, 3})] = 1
	m[ConnectionIDFromBytes([]byte{1, 2, 3, 0})] = 2 // trailing zero: a different ID
	if m[ConnectionIDFromBytes([]byte{1, 2, 3})] != 1 || len(m) != 2 {
		t.Fatalf("map = %v", m)
	}
}

func TestParseConnectionIDTooLong(t *testing.T) {
	if c, err := ParseConnectionID(make([]byte, MaxConnectionIDLen)); err != nil || c.Len() != MaxConnectionIDLen {
		t.Fatal(c, err)
	}
	if _, err := ParseConnectionID(make([]byte, MaxConnectionIDLen+1)); !errors.Is(err, ErrConnectionIDTooLong) {
		t.Fatalf("err = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("ConnectionIDFromBytes took 21 bytes")
		}
	}()
	ConnectionIDFromBytes(make([]byte, MaxConnectionIDLen+1))
}

// TestConnectionIDAppendToAllocs: AppendTo into room it has is free, so
// the packet builders can use it per packet.
func TestConnectionIDAppendToAllocs(t *testing.T) {
	c := ConnectionIDFromBytes([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = c.AppendTo(buf[:0]) }); n != 0 {
		t.Errorf("AppendTo allocates %v times", n)
	}
}
