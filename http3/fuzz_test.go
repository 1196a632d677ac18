package http3

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"testing"
)

// frameSeeds are frame sequences for FuzzFrameReader: every frame type,
// skipped frames, and the error cases.
func frameSeeds() [][]byte {
	return [][]byte{
		settings{QPACKBlockedStreams: 1, MaxFieldSectionSize: 1 << 14, HasMaxFieldSectionSize: true, H3Datagram: true}.append(nil),
		concat(headersFrame{FieldSection: []byte{0, 0, 0xd1, 0xd7}}.append(nil), dataFrame{Length: 3}.append(nil), []byte("abc")),
		concat(goAwayFrame{ID: 16384}.append(nil), maxPushIDFrame{PushID: 7}.append(nil), cancelPushFrame{PushID: 2}.append(nil)),
		pushPromiseFrame{PushID: 1, FieldSection: []byte{0, 0, 0xd1}}.append(nil),
		concat(appendFrameHeader(nil, 0x21, 2), []byte("xx"), goAwayFrame{ID: 0}.append(nil)),
		{0x06, 0x00},
		{0x07, 0x02, 0x05, 0x00},
		{0x00, 0x05, 'a'},
	}
}

func FuzzFrameReader(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s, uint16(0))
		f.Add(s, uint16(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		fr := newFrameReader(bytes.NewReader(data), uint64(limit))
		buf := make([]byte, 7)
		for i := 0; ; i++ {
			if i > len(data) {
				t.Fatal("more frames than input bytes")
			}
			fr2, err := fr.readFrame()
			if err == io.EOF {
				return
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Remote {
					t.Fatalf("error %v (%T) is not a local *Error", err, err)
				}
				return
			}
			if d, ok := fr2.(dataFrame); ok {
				n := uint64(0)
				for {
					m, err := fr.Read(buf)
					n += uint64(m)
					if err == io.EOF {
						break
					}
					if err != nil {
						return // truncated payload: checked by the unit tests
					}
				}
				if n != d.Length {
					t.Fatalf("read %d payload bytes of a %d-byte DATA frame", n, d.Length)
				}
				continue
			}
			// A parsed frame re-encodes to bytes that parse to the same frame.
			again, err := newFrameReader(bytes.NewReader(fr2.append(nil)), 0).readFrame()
			if err != nil || !reflect.DeepEqual(normalizeFrame(again), normalizeFrame(fr2)) {
				t.Fatalf("re-parse of %#v: %#v, %v", fr2, again, err)
			}
		}
	})
}

// normalizeFrame maps empty field sections to nil for comparison.
func normalizeFrame(f frame) frame {
	switch g := f.(type) {
	case headersFrame:
		if len(g.FieldSection) == 0 {
			g.FieldSection = nil
		}
		return g
	case pushPromiseFrame:
		if len(g.FieldSection) == 0 {
			g.FieldSection = nil
		}
		return g
	}
	return f
}

func FuzzParseSettings(f *testing.F) {
	f.Add([]byte{})
	f.Add(settings{QPACKMaxTableCapacity: 4096, QPACKBlockedStreams: 16, MaxFieldSectionSize: 1 << 16,
		HasMaxFieldSectionSize: true, EnableConnectProtocol: true, H3Datagram: true}.append(nil)[2:])
	f.Add(concat(appendSetting(nil, 0x21, 1), appendSetting(nil, 0x06, 100)))
	f.Add(concat(appendSetting(nil, 0x06, 1), appendSetting(nil, 0x06, 1)))
	f.Add(appendSetting(nil, 0x04, 65535))
	f.Add([]byte{0x33, 0x02})
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := parseSettings(p)
		if err != nil {
			if c := errorCode(err); c != ErrCodeSettingsError && c != ErrCodeFrameError {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		frame := s.append(nil)
		fh := newFrameReader(bytes.NewReader(frame), 0)
		got, err := fh.readFrame()
		if err != nil || got != s {
			t.Fatalf("round trip of %+v: %+v, %v", s, got, err)
		}
	})
}

// requestSeeds are field sections for FuzzDecodeRequestHeaders.
func requestSeeds(t testing.TB) [][]byte {
	e := newFieldEncoder()
	var out [][]byte
	for _, req := range []*http.Request{
		{Method: "GET", URL: mustURL("https://example.com/index.html?q=1"), Header: http.Header{"Accept": {"*/*"}, "Cookie": {"a=b"}}},
		{Method: "POST", URL: mustURL("https://example.com/form"), ContentLength: 10, Header: http.Header{"Content-Type": {"text/plain"}}},
		{Method: "CONNECT", URL: mustURL("//proxy.example:443"), Proto: "HTTP/1.1"},
		{Method: "CONNECT", URL: mustURL("https://example.com/chat"), Proto: "websocket"},
		{Method: "OPTIONS", URL: mustURL("https://example.com/"), Header: http.Header{"Te": {"trailers"}}, Trailer: http.Header{"X-Sum": nil}},
	} {
		p, err := e.encodeRequest(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	out = append(out,
		rawSection(t, ":method", "GET", ":scheme", "https", ":path", "/", "host", "a", "cookie", "x=1", "cookie", "y=2"),
		rawSection(t, ":method", "GET", "accept", "x", ":path", "/"),
		[]byte{0, 0, 0x51, 0x0b, '/', 'i', 'n', 'd', 'e', 'x', '.', 'h', 't', 'm', 'l'}, // RFC 9204 B.1
	)
	return out
}

func FuzzDecodeRequestHeaders(f *testing.F) {
	for _, s := range requestSeeds(f) {
		f.Add(s)
	}
	e := newFieldEncoder()
	f.Fuzz(func(t *testing.T, p []byte) {
		req, err := decodeRequest(p, 1<<16, true)
		if err != nil {
			switch errorCode(err) {
			case ErrCodeMessageError, ErrCodeQPACKDecompressionFailed, ErrCodeExcessiveLoad:
				return
			}
			t.Fatalf("unexpected error %v", err)
		}
		if !hasHTTPScheme(t, p, req) {
			// Another scheme is checked less (RFC 9114 section 4.3.1: no
			// authority or path rules) and the request keeps no scheme (as
			// net/http's servers), while the encoder writes https: nothing
			// to re-encode from.
			return
		}
		// An accepted request re-encodes, and decodes to the same request.
		enc, err := e.encodeRequest(nil, req)
		if err != nil {
			t.Fatalf("re-encoding %s %s: %v", req.Method, req.URL, err)
		}
		again, err := decodeRequest(enc, 0, true)
		if err != nil {
			t.Fatalf("decoding the re-encoded request: %v", err)
		}
		h1, h2 := req.Header.Clone(), again.Header.Clone()
		for _, k := range []string{"Content-Length", "Trailer"} {
			delete(h1, k)
			delete(h2, k)
		}
		// "te: trailers" is the one TE value allowed; repeats of it are
		// written once.
		for _, h := range []http.Header{h1, h2} {
			if te, ok := h["Te"]; ok {
				h["Te"] = slices.Compact(te)
			}
		}
		if again.Method != req.Method || again.URL.String() != req.URL.String() || again.Host != req.Host ||
			again.Proto != req.Proto || !reflect.DeepEqual(h1, h2) || !reflect.DeepEqual(again.Trailer, req.Trailer) {
			t.Fatalf("round trip changed the request:\n%s %s %q %q %v %v\n%s %s %q %q %v %v",
				req.Method, req.URL, req.Host, req.Proto, req.Header, req.Trailer,
				again.Method, again.URL, again.Host, again.Proto, again.Header, again.Trailer)
		}
	})
}

// hasHTTPScheme reports whether the accepted request section p has an
// http or https :scheme (a CONNECT without :protocol has none and counts
// as http).
func hasHTTPScheme(t *testing.T, p []byte, req *http.Request) bool {
	fields, err := decodeAll(t, p, 1<<16)
	if err != nil {
		t.Fatalf("decodeRequest accepted a section decodeAll refuses: %v", err)
	}
	for _, f := range fields {
		if f.Name == ":scheme" {
			return isHTTPScheme(f.Value)
		}
	}
	return req.Method == http.MethodConnect
}
