package http3

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

type testCapsule struct {
	t     CapsuleType
	value []byte
}

// parseCapsulesRef is an independent whole-buffer parser: the oracle for
// CapsuleParser. ok is false when the input ends inside a capsule.
func parseCapsulesRef(b []byte) (caps []testCapsule, ok bool) {
	for len(b) > 0 {
		t, n, err := wire.ParseVarint(b)
		if err != nil {
			return caps, false
		}
		b = b[n:]
		l, n, err := wire.ParseVarint(b)
		if err != nil || uint64(len(b)-n) < l {
			return caps, false
		}
		b = b[n:]
		caps = append(caps, testCapsule{CapsuleType(t), b[:l]})
		b = b[l:]
	}
	return caps, true
}

// parseCapsules reads every capsule with CapsuleParser, reading values
// with Read or byte by byte.
func parseCapsules(r io.Reader, byByte bool) ([]testCapsule, error) {
	p := NewCapsuleParser(r)
	var caps []testCapsule
	for {
		t, cr, err := p.Next()
		if err != nil {
			return caps, err
		}
		var v []byte
		if byByte {
			for cr.Remaining() > 0 {
				c, err := cr.ReadByte()
				if err != nil {
					return caps, err
				}
				v = append(v, c)
			}
			if _, err := cr.ReadByte(); err != io.EOF {
				return caps, errors.New("ReadByte past the value did not return io.EOF")
			}
		} else if v, err = io.ReadAll(cr); err != nil {
			return caps, err
		}
		caps = append(caps, testCapsule{t, v})
	}
}

func encodeCapsules(t testing.TB, caps ...testCapsule) []byte {
	var b bytes.Buffer
	for _, c := range caps {
		if err := WriteCapsule(&b, c.t, c.value); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestCapsuleRoundTrip(t *testing.T) {
	caps := []testCapsule{
		{0x00, []byte("datagram payload")}, // DATAGRAM (RFC 9297 section 3.5)
		{0x190B4D38, []byte{}},             // a WebTransport-sized type, empty value
		{CapsuleType(wire.MaxVarint), bytes.Repeat([]byte{7}, maxCoalescedCapsule+1)}, // two Writes
	}
	in := encodeCapsules(t, caps...)
	for _, rk := range readerKinds {
		for _, byByte := range []bool{false, true} {
			got, err := parseCapsules(rk.make(in), byByte)
			if err != io.EOF {
				t.Fatalf("%s byByte=%v: end error %v, want io.EOF", rk.name, byByte, err)
			}
			if len(got) != len(caps) {
				t.Fatalf("%s: %d capsules, want %d", rk.name, len(got), len(caps))
			}
			for i := range caps {
				if got[i].t != caps[i].t || !bytes.Equal(got[i].value, caps[i].value) {
					t.Fatalf("%s: capsule %d = %#x %q, want %#x %q", rk.name, i, got[i].t, got[i].value, caps[i].t, caps[i].value)
				}
			}
		}
	}
}

func TestCapsuleTruncated(t *testing.T) {
	full := encodeCapsules(t, testCapsule{0x4000, []byte("hello")}) // type is a 4-byte varint
	for cut := 1; cut < len(full); cut++ {
		for _, rk := range readerKinds {
			_, err := parseCapsules(rk.make(full[:cut]), false)
			if err != io.ErrUnexpectedEOF {
				t.Fatalf("%s: cut at %d: %v, want io.ErrUnexpectedEOF", rk.name, cut, err)
			}
		}
	}
	if _, err := parseCapsules(bytes.NewReader(nil), false); err != io.EOF {
		t.Fatalf("empty stream: %v, want io.EOF", err)
	}
}

func TestCapsuleReaderRules(t *testing.T) {
	in := encodeCapsules(t, testCapsule{1, []byte("abc")}, testCapsule{2, []byte("de")})
	p := NewCapsuleParser(bytes.NewReader(in))
	_, r1, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Next(); !errors.Is(err, errCapsuleNotConsumed) {
		t.Fatalf("Next before the value was read: %v", err)
	}
	if r1.Remaining() != 3 {
		t.Fatalf("Remaining %d", r1.Remaining())
	}
	if err := r1.Discard(); err != nil {
		t.Fatal(err)
	}
	ct, r2, err := p.Next()
	if err != nil || ct != 2 {
		t.Fatalf("second capsule: %v %v", ct, err)
	}
	if _, err := r1.Read(make([]byte, 1)); !errors.Is(err, errCapsuleReaderInvalid) {
		t.Fatalf("old reader Read: %v", err)
	}
	if _, err := r1.ReadByte(); !errors.Is(err, errCapsuleReaderInvalid) {
		t.Fatalf("old reader ReadByte: %v", err)
	}
	if r1.Remaining() != 0 || (CapsuleReader{}).Remaining() != 0 {
		t.Fatal("an invalid reader has something remaining")
	}
	if v, err := io.ReadAll(r2); err != nil || string(v) != "de" {
		t.Fatalf("second value %q %v", v, err)
	}
	if err := WriteCapsule(io.Discard, CapsuleType(wire.MaxVarint+1), nil); err == nil {
		t.Fatal("a type beyond the varint range was written")
	}
}

// FuzzCapsuleParser checks CapsuleParser against the whole-buffer oracle:
// the same capsules, io.EOF exactly when the input ends between
// capsules, io.ErrUnexpectedEOF otherwise.
func FuzzCapsuleParser(f *testing.F) {
	f.Add(encodeCapsules(f, testCapsule{0, []byte("x")}, testCapsule{0x29, nil}))
	f.Add([]byte{0x40, 0x00, 0x01, 0xff}) // non-minimal type varint
	f.Add([]byte{0x00, 0x80, 0x00, 0x00, 0x05, 1, 2, 3, 4, 5})
	f.Add([]byte{0xc0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		want, ok := parseCapsulesRef(in)
		for _, rk := range readerKinds {
			for _, byByte := range []bool{false, true} {
				got, err := parseCapsules(rk.make(in), byByte)
				if ok && err != io.EOF || !ok && err != io.ErrUnexpectedEOF {
					t.Fatalf("%s byByte=%v: error %v, oracle complete=%v", rk.name, byByte, err, ok)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d capsules, oracle %d", rk.name, len(got), len(want))
				}
				for i := range want {
					if got[i].t != want[i].t || !bytes.Equal(got[i].value, want[i].value) {
						t.Fatalf("%s: capsule %d differs", rk.name, i)
					}
				}
			}
		}
	})
}
