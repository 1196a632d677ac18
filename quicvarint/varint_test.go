package quicvarint

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	quicgovarint "github.com/quic-go/quic-go/quicvarint"
)

var samples = []uint64{0, 1, 63, 64, 16383, 16384, 1<<30 - 1, 1 << 30, Max}

// TestSameEncodingAsQuicGo checks every length against quic-go's quicvarint.
func TestSameEncodingAsQuicGo(t *testing.T) {
	for _, v := range samples {
		ours, theirs := Append(nil, v), quicgovarint.Append(nil, v)
		if !bytes.Equal(ours, theirs) || Len(v) != quicgovarint.Len(v) {
			t.Fatalf("%d: %x (len %d), quic-go %x (len %d)", v, ours, Len(v), theirs, quicgovarint.Len(v))
		}
		for _, l := range []int{1, 2, 4, 8} {
			if l < Len(v) {
				continue
			}
			if a, b := AppendWithLen(nil, v, l), quicgovarint.AppendWithLen(nil, v, l); !bytes.Equal(a, b) {
				t.Fatalf("%d in %d bytes: %x, quic-go %x", v, l, a, b)
			}
		}
		got, n, err := Parse(theirs)
		if err != nil || got != v || n != len(theirs) {
			t.Fatalf("Parse(%x) = %d, %d, %v", theirs, got, n, err)
		}
		r, err := Read(bytes.NewReader(theirs))
		if err != nil || r != v {
			t.Fatalf("Read(%x) = %d, %v", theirs, r, err)
		}
		p, err := Peek(&peeker{b: theirs})
		if err != nil || p != v {
			t.Fatalf("Peek(%x) = %d, %v", theirs, p, err)
		}
	}
}

type peeker struct{ b []byte }

func (p *peeker) Peek(b []byte) (int, error) {
	n := copy(b, p.b)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func TestTruncated(t *testing.T) {
	full := Append(nil, 1<<30)
	if _, _, err := Parse(nil); err != io.EOF {
		t.Fatalf("Parse(empty): %v", err)
	}
	if _, _, err := Parse(full[:3]); err != io.ErrUnexpectedEOF {
		t.Fatalf("Parse(truncated): %v", err)
	}
	if _, err := Read(bytes.NewReader(nil)); err != io.EOF {
		t.Fatalf("Read(empty): %v", err)
	}
	if _, err := Read(bytes.NewReader(full[:5])); err != io.ErrUnexpectedEOF {
		t.Fatalf("Read(truncated): %v", err)
	}
	if _, err := Peek(&peeker{b: full[:2]}); err != io.ErrUnexpectedEOF {
		t.Fatalf("Peek(truncated): %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Append accepted a value above Max")
		}
	}()
	Append(nil, Max+1)
}

func TestReaderWriterWrappers(t *testing.T) {
	// A reader without ReadByte gets one that reads no further than needed.
	src := iotest.OneByteReader(bytes.NewReader(append(Append(nil, 300), 'x')))
	r := NewReader(src)
	if v, err := Read(r); err != nil || v != 300 {
		t.Fatalf("Read = %d, %v", v, err)
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "x" {
		t.Fatalf("rest %q", rest)
	}
	if br := bytes.NewReader(nil); NewReader(br) != Reader(br) {
		t.Fatal("a Reader is wrapped")
	}
	var buf bytes.Buffer
	w := NewWriter(struct{ io.Writer }{&buf})
	if err := w.WriteByte(7); err != nil || buf.String() != "\x07" {
		t.Fatalf("WriteByte: %v %q", err, buf.String())
	}
	if _, err := NewReader(iotest.ErrReader(errors.New("boom"))).ReadByte(); err == nil {
		t.Fatal("error lost")
	}
}

func FuzzParse(f *testing.F) {
	for _, v := range samples {
		f.Add(Append(nil, v))
	}
	f.Add([]byte{0xc0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := Parse(b)
		tv, tn, terr := quicgovarint.Parse(b)
		if (err == nil) != (terr == nil) {
			t.Fatalf("%x: err %v, quic-go %v", b, err, terr)
		}
		if err == nil && (v != tv || n != tn) {
			t.Fatalf("%x: %d (%d bytes), quic-go %d (%d bytes)", b, v, n, tv, tn)
		}
		if err == nil {
			r, rerr := Read(bytes.NewReader(b))
			if rerr != nil || r != v {
				t.Fatalf("%x: Read %d, %v", b, r, rerr)
			}
		}
	})
}
