package udpio

import (
	"bytes"
	"testing"
)

func TestSplitSegments(t *testing.T) {
	b := []byte("aaabbbccc d")
	cases := []struct {
		seg  int
		want []string
	}{
		{0, []string{"aaabbbccc d"}},
		{-3, []string{"aaabbbccc d"}},
		{11, []string{"aaabbbccc d"}},
		{100, []string{"aaabbbccc d"}},
		{3, []string{"aaa", "bbb", "ccc", " d"}},
		{1, []string{"a", "a", "a", "b", "b", "b", "c", "c", "c", " ", "d"}},
		{10, []string{"aaabbbccc ", "d"}},
	}
	for _, c := range cases {
		got := SplitSegments(nil, b, c.seg)
		if len(got) != len(c.want) {
			t.Fatalf("seg %d: %q", c.seg, got)
		}
		for i := range got {
			if string(got[i]) != c.want[i] {
				t.Fatalf("seg %d: part %d = %q, want %q", c.seg, i, got[i], c.want[i])
			}
		}
	}
	if got := SplitSegments(nil, nil, 5); len(got) != 1 || len(got[0]) != 0 {
		t.Fatalf("empty buffer: %q, want one empty datagram", got)
	}
	// A part must not let an append run into the next datagram.
	parts := SplitSegments(nil, b, 3)
	_ = append(parts[0], 'X')
	if b[3] != 'b' {
		t.Fatal("appending to a segment overwrote the next one")
	}
}

func TestMessageDatagramsClampsN(t *testing.T) {
	m := Message{Buf: []byte("abcdef"), N: 100, SegmentSize: 4}
	got := m.Datagrams(nil)
	if len(got) != 2 || string(got[0]) != "abcd" || string(got[1]) != "ef" {
		t.Fatalf("got %q", got)
	}
	m.N = -1
	if got := m.Datagrams(nil); len(got) != 1 || len(got[0]) != 0 {
		t.Fatalf("negative N: got %q", got)
	}
}

func TestValidateSegments(t *testing.T) {
	cases := []struct {
		n, seg int
		ok     bool
	}{
		{1000, 0, true}, {1000, -1, false}, {1000, 2000, true}, {64 * 100, 100, true},
		{64*100 + 1, 100, false}, {70000, 0x10000, false}, {10, 0xffff, true},
	}
	for _, c := range cases {
		err := validateSegments(&Message{Buf: make([]byte, c.n), SegmentSize: c.seg})
		if (err == nil) != c.ok {
			t.Errorf("len %d seg %d: err %v, want ok=%v", c.n, c.seg, err, c.ok)
		}
	}
}

func FuzzSplitSegments(f *testing.F) {
	f.Add([]byte("hello world"), 3)
	f.Add([]byte{}, 0)
	f.Add(make([]byte, 1500), 1200)
	f.Add([]byte("x"), -7)
	f.Fuzz(func(t *testing.T, b []byte, seg int) {
		if len(b) > GROBufferSize {
			return // the most a GRO buffer holds; larger inputs only slow the fuzzer
		}
		parts := SplitSegments(nil, b, seg)
		if len(parts) == 0 {
			t.Fatal("no datagram")
		}
		if !bytes.Equal(bytes.Join(parts, nil), b) {
			t.Fatal("parts do not reassemble the buffer")
		}
		for i, p := range parts {
			if seg > 0 && len(parts) > 1 {
				if i < len(parts)-1 && len(p) != seg {
					t.Fatalf("part %d has %d bytes, want %d", i, len(p), seg)
				}
				if len(p) == 0 || len(p) > seg {
					t.Fatalf("part %d has %d bytes", i, len(p))
				}
			}
		}
		want := 1
		if seg > 0 && seg < len(b) {
			want = (len(b) + seg - 1) / seg
		}
		if len(parts) != want {
			t.Fatalf("%d parts for %d bytes / %d", len(parts), len(b), seg)
		}
	})
}
