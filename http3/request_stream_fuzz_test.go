package http3

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// FuzzRequestStream feeds arbitrary bytes to the server's request stream
// reader: the header section, then the body with its DATA frames,
// content-length check and trailers. Every failure must be an *Error with
// an H3 code (never a panic), and a body that reads to its end must match
// a declared content-length.
func FuzzRequestStream(f *testing.F) {
	req := requestSectionBytes(goodRequest...)
	withCL := requestSectionBytes(append(echoRequest, "content-length", "3")...)
	f.Add(req)
	f.Add(append(append([]byte{}, withCL...), append(dataFrame{Length: 3}.append(nil), "abc"...)...))
	f.Add(append(append([]byte{}, withCL...), append(dataFrame{Length: 2}.append(nil), "ab"...)...))
	f.Add(append(append([]byte{}, req...), requestSectionBytes("x-trailer", "1")...))
	f.Add(append(dataFrame{Length: 1}.append(nil), 'x'))
	f.Add([]byte{0x01, 0x03, 0x00, 0x00, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 1 << 10
		fr := newFrameReader(bytes.NewReader(b), limit)
		check := &requestStreamChecker{}
		r, err := testServerConn(limit).readRequestHeader(fr, check, time.Time{}, nil)
		if err != nil {
			mustBeH3Error(t, err)
			return
		}
		body := &bodyReader{fr: fr, check: check, isRequest: true, maxHeader: limit, contentLength: r.ContentLength}
		n, err := io.Copy(io.Discard, body)
		if err != nil {
			mustBeH3Error(t, err)
			return
		}
		if r.ContentLength >= 0 && n != r.ContentLength {
			t.Fatalf("body of %d bytes accepted with content-length %d", n, r.ContentLength)
		}
	})
}

// testServerConn returns the request-reading state of a server
// connection with header limit limit, without a QUIC connection.
func testServerConn(limit uint64) *serverConn {
	s := &Server{MaxHeaderBytes: int(limit)}
	return &serverConn{s: s, maxHeader: limit, headers: newByteBudget(s.maxConnHeaderBytes(), nil)}
}

func mustBeH3Error(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Remote {
		t.Fatalf("error %v (%T) is not a local *Error", err, err)
	}
}

// requestSectionBytes is requestSection for fuzz seeds, which have no
// *testing.T.
func requestSectionBytes(fields ...string) []byte {
	b, _ := encodeHeadersFrame(fields...)
	return b
}

// encodeHeadersFrame encodes a HEADERS frame from name/value pairs, in
// order, without any validation.
func encodeHeadersFrame(fields ...string) ([]byte, error) {
	e := newFieldEncoder()
	e.begin(nil)
	for i := 0; i+1 < len(fields); i += 2 {
		e.field(fields[i], fields[i+1])
	}
	b, err := e.finish(nil)
	if err != nil {
		return nil, err
	}
	return headersFrame{FieldSection: b}.append(nil), nil
}
