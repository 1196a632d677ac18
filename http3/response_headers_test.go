package http3

import (
	"net/http"
	"reflect"
	"testing"
)

func TestResponseRoundTrip(t *testing.T) {
	tests := []struct {
		status     int
		header     http.Header
		wantHeader http.Header
		wantStatus string
		wantCL     int64
	}{
		{200, http.Header{"Content-Type": {"text/html"}, "Content-Length": {"42"}, "Set-Cookie": {"a=1", "b=2"}},
			http.Header{"Content-Type": {"text/html"}, "Content-Length": {"42"}, "Set-Cookie": {"a=1", "b=2"}}, "200 OK", 42},
		{404, nil, http.Header{}, "404 Not Found", -1},
		{103, http.Header{"Link": {"</style.css>; rel=preload"}}, http.Header{"Link": {"</style.css>; rel=preload"}}, "103 Early Hints", -1},
		{299, nil, http.Header{}, "299", -1},
		{204, http.Header{"Connection": {"close"}, "Transfer-Encoding": {"chunked"}, "Te": {"trailers"}, "Upgrade": {"x"}},
			http.Header{}, "204 No Content", -1},
		{200, http.Header{"Trailer": {"X-Sum"}}, http.Header{}, "200 OK", -1}, // Trailer moves to rsp.Trailer
	}
	e := newFieldEncoder()
	for _, tt := range tests {
		p, err := e.encodeResponse(nil, tt.status, tt.header)
		if err != nil {
			t.Fatalf("%d: encode: %v", tt.status, err)
		}
		rsp, err := decodeResponse(p, 0)
		if err != nil {
			t.Fatalf("%d: decode: %v", tt.status, err)
		}
		if rsp.StatusCode != tt.status || rsp.Status != tt.wantStatus || rsp.ContentLength != tt.wantCL ||
			!reflect.DeepEqual(rsp.Header, tt.wantHeader) || rsp.ProtoMajor != 3 || rsp.Proto != "HTTP/3.0" {
			t.Fatalf("%d: got %q cl=%d header=%v", tt.status, rsp.Status, rsp.ContentLength, rsp.Header)
		}
		if isInterimStatus(rsp.StatusCode) != (tt.status < 200) {
			t.Fatalf("%d: isInterimStatus wrong", tt.status)
		}
		if _, ok := tt.header["Trailer"]; ok && !reflect.DeepEqual(rsp.Trailer, http.Header{"X-Sum": nil}) {
			t.Fatalf("announced trailers %v", rsp.Trailer)
		}
	}
}

func TestEncodeResponseErrors(t *testing.T) {
	e := newFieldEncoder()
	for _, status := range []int{0, 99, 600, 1000, -200} {
		if _, err := e.encodeResponse(nil, status, nil); err == nil {
			t.Fatalf("status %d accepted", status)
		}
	}
	if _, err := e.encodeResponse(nil, 200, http.Header{"X": {"a\nb"}}); err == nil {
		t.Fatal("LF in a value accepted")
	}
}

func TestDecodeResponseValidation(t *testing.T) {
	tests := []struct {
		name   string
		fields []string
		ok     bool
	}{
		{"valid", []string{":status", "200", "content-type", "text/plain"}, true},
		{"valid 599", []string{":status", "599"}, true},
		{"valid 100", []string{":status", "100"}, true},
		{"missing status", []string{"content-type", "text/plain"}, false},
		{"duplicate status", []string{":status", "200", ":status", "200"}, false},
		{"status 101", []string{":status", "101"}, true}, // terminal, as in net/http and quic-go
		{"status 099", []string{":status", "099"}, false},
		{"status 600", []string{":status", "600"}, false},
		{"status 1000", []string{":status", "1000"}, false},
		{"status 20", []string{":status", "20"}, false},
		{"status text", []string{":status", "abc"}, false},
		{"status with reason", []string{":status", "200 OK"}, false},
		{"request pseudo-header", []string{":status", "200", ":path", "/"}, false},
		{"unknown pseudo-header", []string{":status", "200", ":x", "y"}, false},
		{"pseudo-header after regular", []string{"server", "x", ":status", "200"}, false},
		{"te", []string{":status", "200", "te", "trailers"}, false},
		{"connection", []string{":status", "200", "connection", "close"}, false},
		{"uppercase name", []string{":status", "200", "Server", "x"}, false},
		{"CR in value", []string{":status", "200", "server", "a\rb"}, false},
		{"conflicting content-length", []string{":status", "200", "content-length", "1", "content-length", "2"}, false},
	}
	for _, tt := range tests {
		_, err := decodeResponse(rawSection(t, tt.fields...), 0)
		if tt.ok {
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			continue
		}
		if errorCode(err) != ErrCodeMessageError {
			t.Fatalf("%s: %v, want H3_MESSAGE_ERROR", tt.name, err)
		}
	}
}

func TestTrailers(t *testing.T) {
	e := newFieldEncoder()
	p, err := e.encodeTrailers(nil, http.Header{"X-Sum": {"abc"}, "Connection": {"close"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := decodeTrailers(p, 0, false)
	if err != nil || !reflect.DeepEqual(h, http.Header{"X-Sum": {"abc"}}) {
		t.Fatalf("trailers %v, %v", h, err)
	}
	// An empty trailer section is still a valid field section.
	p, err = e.encodeTrailers(nil, nil)
	if err != nil || len(p) != 2 {
		t.Fatalf("empty trailers %x, %v", p, err)
	}
	if h, err := decodeTrailers(p, 0, true); err != nil || len(h) != 0 {
		t.Fatalf("empty trailers decoded as %v, %v", h, err)
	}

	bad := [][]string{
		{":status", "200"},
		{"x-sum", "abc", ":path", "/"},
		{"transfer-encoding", "chunked"},
		{"X-Sum", "abc"},
		{"x-sum", "a\x00"},
	}
	for _, fields := range bad {
		_, err := decodeTrailers(rawSection(t, fields...), 0, true)
		if errorCode(err) != ErrCodeMessageError {
			t.Fatalf("%v: %v, want H3_MESSAGE_ERROR", fields, err)
		}
	}
	_, err = decodeTrailers(rawSection(t, "x", "y"), 10, false)
	wantCode(t, err, ErrCodeExcessiveLoad)
}

func TestAppendToExistingBuffer(t *testing.T) {
	e := newFieldEncoder()
	prefix := []byte("frame-header")
	p, err := e.encodeResponse(append([]byte{}, prefix...), 200, nil)
	if err != nil || string(p[:len(prefix)]) != string(prefix) {
		t.Fatalf("prefix clobbered: %q, %v", p, err)
	}
	if _, err := decodeResponse(p[len(prefix):], 0); err != nil {
		t.Fatal(err)
	}
	// On error the caller's buffer comes back unchanged.
	got, err := e.encodeResponse(prefix, 600, nil)
	if err == nil || string(got) != string(prefix) {
		t.Fatalf("error path: %q, %v", got, err)
	}
}
