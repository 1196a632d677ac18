package wire

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 9000 appendix A.1 examples.
func TestVarintRFCExamples(t *testing.T) {
	tests := []struct {
		enc     string
		v       uint64
		minimal bool
	}{
		{"c2197c5eff14e88c", 151288809941952652, true},
		{"9d7f3e7d", 494878333, true},
		{"7bbd", 15293, true},
		{"25", 37, true},
		{"4025", 37, false}, // the two-byte encoding of 37 the RFC also shows
	}
	for _, tt := range tests {
		b := mustHex(t, tt.enc)
		v, n, err := ParseVarint(append(b, 0xff)) // trailing byte must be ignored
		if err != nil || v != tt.v || n != len(b) {
			t.Errorf("ParseVarint(%s) = %d, %d, %v; want %d, %d", tt.enc, v, n, err, tt.v, len(b))
		}
		if !tt.minimal {
			continue
		}
		if got := AppendVarint(nil, tt.v); !bytes.Equal(got, b) {
			t.Errorf("AppendVarint(%d) = %x, want %s", tt.v, got, tt.enc)
		}
		if VarintLen(tt.v) != len(b) {
			t.Errorf("VarintLen(%d) = %d, want %d", tt.v, VarintLen(tt.v), len(b))
		}
	}
}

func TestVarintBoundaries(t *testing.T) {
	for _, c := range []struct {
		v uint64
		n int
	}{{0, 1}, {63, 1}, {64, 2}, {16383, 2}, {16384, 4}, {1<<30 - 1, 4}, {1 << 30, 8}, {MaxVarint, 8}} {
		b := AppendVarint([]byte{0xaa}, c.v)
		if len(b) != 1+c.n || b[0] != 0xaa {
			t.Errorf("AppendVarint(%d) = %x, want %d bytes after prefix", c.v, b, c.n)
		}
		v, n, err := ParseVarint(b[1:])
		if err != nil || v != c.v || n != c.n {
			t.Errorf("round trip %d: got %d, %d, %v", c.v, v, n, err)
		}
	}
}

func TestVarintWithLen(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8} {
		b := AppendVarintWithLen(nil, 37, n)
		if len(b) != n {
			t.Fatalf("len %d: got %x", n, b)
		}
		if v, m, err := ParseVarint(b); err != nil || v != 37 || m != n {
			t.Errorf("len %d: parsed %d, %d, %v", n, v, m, err)
		}
	}
	// A 2-byte placeholder patched later, as packet builders do.
	b := AppendVarintWithLen([]byte{1}, 0, 2)
	PutVarintWithLen(b[1:], 1182, 2)
	if !bytes.Equal(b, []byte{1, 0x44, 0x9e}) {
		t.Errorf("patched placeholder = %x, want 01449e", b)
	}
}

func TestVarintPanicsOnProgrammingErrors(t *testing.T) {
	for name, f := range map[string]func(){
		"too large":      func() { AppendVarint(nil, MaxVarint+1) },
		"does not fit":   func() { AppendVarintWithLen(nil, 64, 1) },
		"invalid length": func() { AppendVarintWithLen(nil, 1, 3) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestVarintTruncated(t *testing.T) {
	for _, s := range []string{"", "40", "9d7f3e", "c2197c5eff14e8"} {
		if _, _, err := ParseVarint(mustHex(t, s)); err != ErrVarintTruncated {
			t.Errorf("ParseVarint(%q) err = %v, want ErrVarintTruncated", s, err)
		}
	}
}
