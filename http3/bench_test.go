package http3

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// BenchmarkFrameReaderData measures parsing a stream of 1200-byte DATA
// frames, the request body fast path: header parse plus payload copy.
func BenchmarkFrameReaderData(b *testing.B) {
	payload := make([]byte, 1200)
	var in []byte
	for range 16 {
		in = append(dataFrame{Length: uint64(len(payload))}.append(in), payload...)
	}
	r := bytes.NewReader(in)
	fr := newFrameReader(r, 0)
	buf := make([]byte, 1500)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(in)
		fr.remaining = 0
		for {
			if _, err := fr.next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(fr, buf[:1200]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFrameReaderHeaders measures reading HEADERS frames into a
// reused buffer, as a request stream does before QPACK decoding.
func BenchmarkFrameReaderHeaders(b *testing.B) {
	section := make([]byte, 200)
	in := headersFrame{FieldSection: section}.append(nil)
	r := bytes.NewReader(in)
	fr := newFrameReader(r, 0)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(in)
		if _, err := fr.next(); err != nil {
			b.Fatal(err)
		}
		var err error
		if buf, err = fr.readPayload(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSettings(b *testing.B) {
	p := settings{QPACKMaxTableCapacity: 4096, QPACKBlockedStreams: 16, MaxFieldSectionSize: 1 << 16,
		HasMaxFieldSectionSize: true, EnableConnectProtocol: true, H3Datagram: true}.append(nil)[2:]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseSettings(p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRequest() *http.Request {
	return &http.Request{Method: "GET", URL: mustURL("https://www.example.com/static/app.js?v=42"),
		Header: http.Header{
			"Accept":          {"*/*"},
			"Accept-Encoding": {"gzip, deflate, br"},
			"Accept-Language": {"en-US,en;q=0.9"},
			"User-Agent":      {"turboretry-bench/1.0"},
			"Referer":         {"https://www.example.com/"},
			"Cookie":          {"session=0123456789abcdef"},
		}}
}

func BenchmarkEncodeRequest(b *testing.B) {
	e := newFieldEncoder()
	req := benchRequest()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.encodeRequest(buf[:0], req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	p, err := newFieldEncoder().encodeRequest(nil, benchRequest())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRequest(p, 1<<16, false); err != nil {
			b.Fatal(err)
		}
	}
}

func benchResponseHeader() http.Header {
	return http.Header{
		"Content-Type":   {"application/javascript"},
		"Content-Length": {"12345"},
		"Cache-Control":  {"max-age=3600"},
		"Server":         {"turboretry"},
		"Date":           {"Sun, 29 Nov 2026 20:00:00 GMT"},
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	e := newFieldEncoder()
	h := benchResponseHeader()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.encodeResponse(buf[:0], 200, h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	p, err := newFieldEncoder().encodeResponse(nil, 200, benchResponseHeader())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeResponse(p, 1<<16); err != nil {
			b.Fatal(err)
		}
	}
}
