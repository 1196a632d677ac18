package interopendpoint

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadRequest(t *testing.T) {
	long := "/" + strings.Repeat("a", 250)
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"GET /file\r\n", "/file", true},
		{"GET /file\n", "/file", true},
		{"GET /file", "/file", true}, // ended by FIN
		{"GET " + long + "\r\n", long, true},
		{"GET /a\r\nGET /b\r\n", "/a", true},
		{"POST /file\r\n", "", false},
		{"GET file\r\n", "", false},
		{"GET /a b\r\n", "", false},
		{"GET /a\x00\r\n", "", false},
		{"", "", false},
		{"GET /" + strings.Repeat("x", maxRequestLine) + "\r\n", "", false},
	} {
		// One byte per Read, as a stream may deliver it.
		got, err := readRequest(iotest.OneByteReader(strings.NewReader(tc.in)))
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("readRequest(%.40q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if !tc.ok && err != nil && !errors.Is(err, errBadRequest) {
			t.Errorf("readRequest(%.40q): error %v is not errBadRequest", tc.in, err)
		}
	}
	if got := string(appendRequest(nil, "/x")); got != "GET /x\r\n" {
		t.Errorf("appendRequest = %q", got)
	}
}

// TestReadRequestBounded: a peer that never ends its request line costs
// at most maxRequestLine bytes of reading.
func TestReadRequestBounded(t *testing.T) {
	r := &countingReader{r: io.MultiReader(strings.NewReader("GET /"), infiniteA{})}
	if _, err := readRequest(r); !errors.Is(err, errBadRequest) {
		t.Fatalf("endless request line: %v", err)
	}
	if r.n > maxRequestLine {
		t.Fatalf("read %d bytes, want at most %d", r.n, maxRequestLine)
	}
}

type infiniteA struct{}

func (infiniteA) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{"GET /a\r\n", "GET /\n", "GET", "GET /a b", "\r\n", "GET /" + strings.Repeat("z", 300)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := readRequest(bytes.NewReader(b))
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \r\n\x00") || len(p) > maxPath {
			t.Fatalf("accepted path %q from %q", p, b)
		}
		if got, err := readRequest(bytes.NewReader(appendRequest(nil, p))); err != nil || got != p {
			t.Fatalf("round trip of %q: %q, %v", p, got, err)
		}
	})
}
