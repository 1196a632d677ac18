package http3

import (
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestRequestRoundTrip(t *testing.T) {
	withTrailer := &http.Request{Method: "POST", URL: mustURL("https://example.com/upload"),
		Header: http.Header{"Te": {"gzip, trailers"}}, Trailer: http.Header{"X-Checksum": nil, "X-Count": nil},
		ContentLength: -1, Body: io.NopCloser(strings.NewReader("x"))}
	tests := []struct {
		name   string
		req    *http.Request
		want   http.Request // fields compared: Method, URL, Host, Header, ContentLength, Trailer, Proto, RequestURI
		wantCL int64
	}{
		{
			name: "GET with headers",
			req: &http.Request{Method: "GET", URL: mustURL("https://example.com:8443/a/b?q=1&r=%20"),
				Header: http.Header{"Accept": {"text/html"}, "X-Multi": {"one", "two"}, "Cookie": {"a=1"},
					"Connection": {"keep-alive"}, "Keep-Alive": {"300"}, "Proxy-Connection": {"x"},
					"Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "Host": {"ignored.example"},
					"Te": {"gzip"}, "Content-Length": {"99"}}},
			want: http.Request{Method: "GET", URL: mustURL("https://example.com:8443/a/b?q=1&r=%20"),
				Host: "example.com:8443", Header: http.Header{"Accept": {"text/html"}, "X-Multi": {"one", "two"}, "Cookie": {"a=1"}},
				Proto: "HTTP/3.0", RequestURI: "/a/b?q=1&r=%20"},
			wantCL: -1,
		},
		{
			name: "POST with length and Host override",
			req: &http.Request{Method: "POST", URL: mustURL("https://10.0.0.1/form"), Host: "example.org",
				ContentLength: 11, Body: io.NopCloser(strings.NewReader("hello world")),
				Header: http.Header{"Content-Type": {"text/plain"}}},
			want: http.Request{Method: "POST", URL: mustURL("https://example.org/form"), Host: "example.org",
				Header: http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"11"}},
				Proto:  "HTTP/3.0", RequestURI: "/form"},
			wantCL: 11,
		},
		{
			name: "empty PUT sends content-length 0",
			req:  &http.Request{Method: "PUT", URL: mustURL("https://example.com/x")},
			want: http.Request{Method: "PUT", URL: mustURL("https://example.com/x"), Host: "example.com",
				Header: http.Header{"Content-Length": {"0"}}, Proto: "HTTP/3.0", RequestURI: "/x"},
			wantCL: 0,
		},
		{
			name: "default method, empty path",
			req:  &http.Request{URL: mustURL("https://example.com")},
			want: http.Request{Method: "GET", URL: mustURL("https://example.com/"), Host: "example.com",
				Header: http.Header{}, Proto: "HTTP/3.0", RequestURI: "/"},
			wantCL: -1,
		},
		{
			name: "OPTIONS *",
			req:  &http.Request{Method: "OPTIONS", URL: &url.URL{Scheme: "https", Host: "example.com", Path: "*"}},
			want: http.Request{Method: "OPTIONS", URL: &url.URL{Scheme: "https", Host: "example.com", Path: "*"},
				Host: "example.com", Header: http.Header{}, Proto: "HTTP/3.0", RequestURI: "*"},
			wantCL: -1,
		},
		{
			name: "CONNECT",
			req:  &http.Request{Method: "CONNECT", URL: &url.URL{Host: "proxy.example:443"}, Proto: "HTTP/1.1"},
			want: http.Request{Method: "CONNECT", URL: &url.URL{Host: "proxy.example:443"}, Host: "proxy.example:443",
				Header: http.Header{}, Proto: "HTTP/3.0", RequestURI: "proxy.example:443"},
			wantCL: -1,
		},
		{
			name: "extended CONNECT",
			req:  &http.Request{Method: "CONNECT", URL: mustURL("https://example.com/chat"), Proto: "websocket"},
			want: http.Request{Method: "CONNECT", URL: mustURL("https://example.com/chat"), Host: "example.com",
				Header: http.Header{}, Proto: "websocket", RequestURI: "/chat"},
			wantCL: -1,
		},
		{
			name: "trailers announced",
			req:  withTrailer,
			want: http.Request{Method: "POST", URL: mustURL("https://example.com/upload"), Host: "example.com",
				Header:  http.Header{"Te": {"trailers"}}, // "trailer" becomes Request.Trailer
				Trailer: http.Header{"X-Checksum": nil, "X-Count": nil}, Proto: "HTTP/3.0", RequestURI: "/upload"},
			wantCL: -1,
		},
	}
	e := newFieldEncoder()
	for _, tt := range tests {
		p, err := e.encodeRequest(nil, tt.req)
		if err != nil {
			t.Fatalf("%s: encode: %v", tt.name, err)
		}
		got, err := decodeRequest(p, 0, true)
		if err != nil {
			t.Fatalf("%s: decode: %v", tt.name, err)
		}
		w := tt.want
		wantURL := *w.URL // a server's URL has neither scheme nor host, as in net/http
		if w.Method != http.MethodConnect || w.Proto != "HTTP/3.0" {
			wantURL.Scheme, wantURL.Host = "", ""
		}
		w.URL = &wantURL
		if got.Method != w.Method || got.URL.String() != w.URL.String() || got.Host != w.Host ||
			!reflect.DeepEqual(got.Header, w.Header) || got.ContentLength != tt.wantCL ||
			!reflect.DeepEqual(got.Trailer, w.Trailer) || got.Proto != w.Proto || got.RequestURI != w.RequestURI {
			t.Fatalf("%s:\n got %s %s host=%q header=%v cl=%d trailer=%v proto=%q uri=%q\nwant %s %s host=%q header=%v cl=%d trailer=%v proto=%q uri=%q",
				tt.name, got.Method, got.URL, got.Host, got.Header, got.ContentLength, got.Trailer, got.Proto, got.RequestURI,
				w.Method, w.URL, w.Host, w.Header, tt.wantCL, w.Trailer, w.Proto, w.RequestURI)
		}
		if got.ProtoMajor != 3 {
			t.Fatalf("%s: ProtoMajor %d", tt.name, got.ProtoMajor)
		}
	}
}

func TestEncodeRequestPseudoHeadersFirst(t *testing.T) {
	req := &http.Request{Method: "GET", URL: mustURL("https://example.com/"),
		Header: http.Header{"A": {"1"}, "B": {"2"}, "C": {"3"}}}
	p, err := newFieldEncoder().encodeRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := decodeAll(t, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if strings.Join(names[:4], " ") != ":authority :method :path :scheme" {
		t.Fatalf("field order %v", names)
	}
	for _, n := range names[4:] {
		if strings.HasPrefix(n, ":") || n != strings.ToLower(n) {
			t.Fatalf("field order or case: %v", names)
		}
	}
}

func TestEncodeRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  *http.Request
	}{
		{"no URL", &http.Request{Method: "GET"}},
		{"bad method", &http.Request{Method: "GE T", URL: mustURL("https://a/")}},
		{"bad header name", &http.Request{URL: mustURL("https://a/"), Header: http.Header{"Bad Name": {"x"}}}},
		{"header name with colon", &http.Request{URL: mustURL("https://a/"), Header: http.Header{":path": {"/x"}}}},
		{"bad header value", &http.Request{URL: mustURL("https://a/"), Header: http.Header{"X": {"a\r\nb"}}}},
		{"NUL in value", &http.Request{URL: mustURL("https://a/"), Header: http.Header{"X": {"a\x00b"}}}},
		{"no host", &http.Request{URL: &url.URL{Scheme: "https", Path: "/"}}},
		{"host with space", &http.Request{URL: mustURL("https://a/"), Host: "a b"}},
		{"bad extended CONNECT protocol", &http.Request{Method: "CONNECT", URL: mustURL("https://a/"), Proto: "web socket"}},
		{"bad scheme", &http.Request{URL: &url.URL{Scheme: "h t", Host: "a", Path: "/"}}},
		{"CONNECT without authority", &http.Request{Method: "CONNECT", URL: &url.URL{}}},
	}
	e := newFieldEncoder()
	for _, tt := range tests {
		if _, err := e.encodeRequest(nil, tt.req); err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		// The encoder is reusable after an error, even one found after
		// some fields were written.
		p, err := e.encodeRequest(nil, &http.Request{URL: mustURL("https://a/")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeRequest(p, 0, false); err != nil {
			t.Fatalf("after %s: %v", tt.name, err)
		}
	}
}

func TestDecodeRequestValidation(t *testing.T) {
	base := []string{":method", "GET", ":scheme", "https", ":authority", "example.com", ":path", "/"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	tests := []struct {
		name   string
		fields []string
		ok     bool
	}{
		{"valid", base, true},
		{"valid with host equal to authority", with("host", "example.com"), true},
		{"valid host instead of authority", []string{":method", "GET", ":scheme", "https", ":path", "/", "host", "example.com"}, true},
		{"valid te trailers", with("te", "trailers"), true},
		{"valid non-http scheme without authority", []string{":method", "GET", ":scheme", "foo", ":path", "/x"}, true},
		{"valid scheme with digits and symbols", []string{":method", "GET", ":scheme", "a1+b-c.d", ":path", "/x"}, true},
		{"valid OPTIONS *", []string{":method", "OPTIONS", ":scheme", "https", ":authority", "a", ":path", "*"}, true},
		{"valid CONNECT", []string{":method", "CONNECT", ":authority", "example.com:443"}, true},
		{"valid repeated equal content-length", with("content-length", "5", "content-length", "5"), true},
		{"valid extended CONNECT", []string{":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":authority", "a", ":path", "/chat"}, true},

		{"missing method", base[2:], false},
		{"missing scheme", []string{":method", "GET", ":authority", "a", ":path", "/"}, false},
		{"missing path", []string{":method", "GET", ":scheme", "https", ":authority", "a"}, false},
		{"missing authority and host", []string{":method", "GET", ":scheme", "https", ":path", "/"}, false},
		{"empty authority", []string{":method", "GET", ":scheme", "https", ":authority", "", ":path", "/"}, false},
		{"uppercase scheme without authority", []string{":method", "GET", ":scheme", "HTTPS", ":path", "/"}, false},
		{"empty host", []string{":method", "GET", ":scheme", "https", ":path", "/", "host", ""}, false},
		{"empty path", []string{":method", "GET", ":scheme", "https", ":authority", "a", ":path", ""}, false},
		{"relative path", []string{":method", "GET", ":scheme", "https", ":authority", "a", ":path", "x"}, false},
		{"asterisk path in GET", []string{":method", "GET", ":scheme", "https", ":authority", "a", ":path", "*"}, false},
		{"userinfo in authority", []string{":method", "GET", ":scheme", "https", ":authority", "u:p@a", ":path", "/"}, false},
		{"authority and host differ", with("host", "other.example"), false},
		{"two host fields", []string{":method", "GET", ":scheme", "https", ":path", "/", "host", "a", "host", "a"}, false},
		{"duplicate method", append([]string{":method", "POST"}, base...), false},
		{"duplicate path", with(":path", "/x"), false},
		{"duplicate authority", with(":authority", "example.com"), false},
		{"unknown pseudo-header", with(":foo", "bar"), false},
		{"response pseudo-header", with(":status", "200"), false},
		{"pseudo-header after regular", append([]string{":method", "GET", "accept", "*/*"}, base[2:]...), false},
		{"uppercase name", with("Accept", "*/*"), false},
		{"empty name", with("", "x"), false},
		{"space in name", with("x y", "z"), false},
		{"CR in value", with("x", "a\rb"), false},
		{"LF in value", with("x", "a\nb"), false},
		{"NUL in value", with("x", "a\x00b"), false},
		{"connection", with("connection", "close"), false},
		{"keep-alive", with("keep-alive", "5"), false},
		{"proxy-connection", with("proxy-connection", "x"), false},
		{"transfer-encoding", with("transfer-encoding", "chunked"), false},
		{"upgrade", with("upgrade", "websocket"), false},
		{"te other than trailers", with("te", "gzip"), false},
		{"content-length not a number", with("content-length", "5x"), false},
		{"content-length negative", with("content-length", "-1"), false},
		{"content-length plus", with("content-length", "+1"), false},
		{"content-length empty", with("content-length", ""), false},
		{"content-length list", with("content-length", "5, 5"), false},
		{"content-length conflicting", with("content-length", "5", "content-length", "6"), false},
		{"content-length overflow", with("content-length", "99999999999999999999"), false},
		{"invalid method token", []string{":method", "G(T", ":scheme", "https", ":authority", "a", ":path", "/"}, false},
		{"CONNECT with path", []string{":method", "CONNECT", ":authority", "a:443", ":path", "/"}, false},
		{"CONNECT with scheme", []string{":method", "CONNECT", ":authority", "a:443", ":scheme", "https"}, false},
		{"CONNECT without authority", []string{":method", "CONNECT"}, false},
		{":protocol without CONNECT", with(":protocol", "websocket"), false},
		{"extended CONNECT without path", []string{":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":authority", "a"}, false},
		{"bad authority", []string{":method", "GET", ":scheme", "https", ":authority", "a b", ":path", "/"}, false},
		{"bad scheme", []string{":method", "GET", ":scheme", "ht tp", ":authority", "a", ":path", "/"}, false},
		{"scheme starting with a digit", []string{":method", "GET", ":scheme", "1http", ":authority", "a", ":path", "/"}, false},
		{"empty scheme", []string{":method", "GET", ":scheme", "", ":authority", "a", ":path", "/"}, false},
		{"bad protocol", []string{":method", "CONNECT", ":protocol", "web socket", ":scheme", "https", ":authority", "a", ":path", "/"}, false},
		{"authority with slash", []string{":method", "GET", ":scheme", "https", ":authority", "a/b", ":path", "/"}, false},
		{"host with space", []string{":method", "GET", ":scheme", "https", ":path", "/", "host", "a "}, false},
		{"CONNECT authority with path", []string{":method", "CONNECT", ":authority", "a:443/x"}, false},
	}
	for _, tt := range tests {
		_, err := decodeRequest(rawSection(t, tt.fields...), 0, true)
		if tt.ok {
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("%s: accepted", tt.name)
		}
		if errorCode(err) != ErrCodeMessageError {
			t.Fatalf("%s: %v, want H3_MESSAGE_ERROR", tt.name, err)
		}
	}
}

func TestDecodeRequestExtendedConnectNeedsSetting(t *testing.T) {
	p := rawSection(t, ":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":authority", "a", ":path", "/")
	_, err := decodeRequest(p, 0, false)
	wantCode(t, err, ErrCodeMessageError)
}

func TestDecodeRequestDetails(t *testing.T) {
	p := rawSection(t, ":method", "GET", ":scheme", "https", ":path", "/p?x=1",
		"host", "example.com", "cookie", "a=1", "accept", "*/*", "cookie", "b=2", "cookie", "c=3",
		"content-length", "7", "content-length", "7", "x-custom-thing", "v",
		"trailer", "X-Sum, content-length, Host", "te", "trailers")
	req, err := decodeRequest(p, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{
		"Cookie":         {"a=1; b=2; c=3"}, // RFC 9114 section 4.2.1
		"Accept":         {"*/*"},
		"Content-Length": {"7"},
		"X-Custom-Thing": {"v"},
		"Te":             {"trailers"},
	}
	if !reflect.DeepEqual(req.Header, want) {
		t.Fatalf("header %v, want %v", req.Header, want)
	}
	if req.Host != "example.com" || req.URL.Host != "" || req.ContentLength != 7 ||
		req.URL.RawQuery != "x=1" || !reflect.DeepEqual(req.Trailer, http.Header{"X-Sum": nil}) {
		t.Fatalf("request %+v", req)
	}
}
