package http3

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/quic"
)

// rawConn is a hand-written HTTP/3 client on our QUIC package, for
// sending what a correct client never would.
type rawConn struct {
	t  *testing.T
	qc *quic.Conn
}

func dialRaw(t *testing.T, addr string, clientTLS *tls.Config) *rawConn {
	t.Helper()
	qc, err := quic.DialAddr(context.Background(), addr, clientTLS, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	return &rawConn{t: t, qc: qc}
}

// openUni opens a unidirectional stream and writes b on it.
func (c *rawConn) openUni(b []byte) *quic.SendStream {
	c.t.Helper()
	s, err := c.qc.OpenUniStream()
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := s.Write(b); err != nil {
		c.t.Fatal(err)
	}
	return s
}

// control opens a valid control stream with an empty SETTINGS frame.
func (c *rawConn) control() *quic.SendStream {
	return c.openUni(settings{}.append(appendStreamType(nil, streamTypeControl)))
}

// request opens a request stream, writes b and closes it.
func (c *rawConn) request(b []byte) *quic.Stream {
	c.t.Helper()
	s, err := c.qc.OpenStream()
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := s.Write(b); err != nil {
		c.t.Fatal(err)
	}
	s.Close()
	return s
}

// wantConnClosed waits for the server to close the connection and checks
// the H3 error code it sent.
func (c *rawConn) wantConnClosed(code ErrCode) {
	c.t.Helper()
	<-c.qc.Context().Done()
	var ae *quic.ApplicationError
	if err := context.Cause(c.qc.Context()); !errors.As(err, &ae) || !ae.Remote || ErrCode(ae.ErrorCode) != code {
		c.t.Fatalf("connection closed with %v, want the server's %s", err, code)
	}
}

// wantStreamReset reads s to its end and checks that the server reset it
// with code.
func wantStreamReset(t *testing.T, s *quic.Stream, code ErrCode) {
	t.Helper()
	_, err := io.ReadAll(s)
	var se *quic.StreamError
	if !errors.As(err, &se) || !se.Remote || ErrCode(se.ErrorCode) != code {
		t.Fatalf("stream ended with %v, want a reset with %s", err, code)
	}
}

// requestSection encodes a HEADERS frame from name/value pairs, in
// order, without any validation.
func requestSection(t *testing.T, fields ...string) []byte {
	t.Helper()
	b, err := encodeHeadersFrame(fields...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readResponseStatus reads the next frame from fr, which must be a HEADERS
// frame with a valid response header section, and returns its status.
func readResponseStatus(t *testing.T, fr *frameReader) int {
	t.Helper()
	f, err := fr.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	h, ok := f.(headersFrame)
	if !ok {
		t.Fatalf("frame %T, want HEADERS", f)
	}
	rsp, err := decodeResponse(h.FieldSection, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rsp.StatusCode
}

var (
	goodRequest = []string{":method", "GET", ":scheme", "https", ":authority", "localhost", ":path", "/hello"}
	// echoRequest goes to a handler that reads the whole body.
	echoRequest = []string{":method", "POST", ":scheme", "https", ":authority", "localhost", ":path", "/echo"}
)

// stillServes checks that the server answers a fresh connection.
func stillServes(t *testing.T, addr string, clientTLS *tls.Config) {
	t.Helper()
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	fetchHello(t, tr, addr)
}

func TestServerRejectsMalformedRequests(t *testing.T) {
	checkGoroutines(t)
	_, addr, clientTLS := startServer(t, testHandler())

	streamCases := []struct {
		name string
		send []byte
		code ErrCode
	}{
		{"missing :path", requestSection(t, ":method", "GET", ":scheme", "https", ":authority", "localhost"), ErrCodeMessageError},
		{"unknown pseudo-header", requestSection(t, append(goodRequest, ":foo", "bar")...), ErrCodeMessageError},
		{"pseudo after regular", requestSection(t, ":method", "GET", "accept", "*/*", ":scheme", "https", ":authority", "localhost", ":path", "/"), ErrCodeMessageError},
		{"uppercase field name", requestSection(t, append(goodRequest, "Accept", "*/*")...), ErrCodeMessageError},
		{"connection field", requestSection(t, append(goodRequest, "connection", "close")...), ErrCodeMessageError},
		{"empty stream", nil, ErrCodeRequestIncomplete},
		// Longer than its content-length: reset at once. (A shorter body
		// ends with an error the handler sees and may answer:
		// TestRequestBodyShorterThanContentLength.)
		{"content-length mismatch", append(requestSection(t, append(echoRequest, "content-length", "3")...),
			dataFrame{Length: 5}.append(nil)...), ErrCodeMessageError},
	}
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr, clientTLS)
			c.control()
			send := tc.send
			if tc.name == "content-length mismatch" {
				send = append(send, "12345"...)
			}
			wantStreamReset(t, c.request(send), tc.code)
			stillServes(t, addr, clientTLS)
		})
	}

	connCases := []struct {
		name string
		run  func(c *rawConn)
		code ErrCode
	}{
		{"DATA before HEADERS", func(c *rawConn) {
			c.control()
			c.request(append(dataFrame{Length: 1}.append(nil), 'x'))
		}, ErrCodeFrameUnexpected},
		{"SETTINGS on a request stream", func(c *rawConn) {
			c.control()
			c.request(append(requestSection(t, echoRequest...), settings{}.append(nil)...))
		}, ErrCodeFrameUnexpected},
		{"HTTP/2 PING frame", func(c *rawConn) {
			c.control()
			c.request(appendFrameHeader(nil, frameTypeH2Ping, 0))
		}, ErrCodeFrameUnexpected},
		{"control stream without SETTINGS", func(c *rawConn) {
			c.openUni(append(appendStreamType(nil, streamTypeControl), goAwayFrame{ID: 0}.append(nil)...))
		}, ErrCodeMissingSettings},
		{"second SETTINGS", func(c *rawConn) {
			s := c.control()
			s.Write(settings{}.append(nil))
		}, ErrCodeFrameUnexpected},
		{"DATA on the control stream", func(c *rawConn) {
			s := c.control()
			s.Write(dataFrame{Length: 0}.append(nil))
		}, ErrCodeFrameUnexpected},
		{"two control streams", func(c *rawConn) {
			c.control()
			c.control()
		}, ErrCodeStreamCreationError},
		{"control stream closed", func(c *rawConn) {
			c.control().Close()
		}, ErrCodeClosedCriticalStream},
		{"push stream from a client", func(c *rawConn) {
			c.control()
			c.openUni(appendStreamType(nil, streamTypePush))
		}, ErrCodeStreamCreationError},
		{"malformed SETTINGS", func(c *rawConn) {
			c.openUni(append(appendStreamType(nil, streamTypeControl), appendFrameHeader(nil, frameTypeSettings, 1)...)).Write([]byte{0x40})
		}, ErrCodeFrameError},
		{"HTTP/2 setting", func(c *rawConn) {
			b := appendFrameHeader(appendStreamType(nil, streamTypeControl), frameTypeSettings, 2)
			c.openUni(append(b, 0x02, 0x00))
		}, ErrCodeSettingsError},
		{"QPACK dynamic table reference", func(c *rawConn) {
			c.control()
			// Required Insert Count 1: a dynamic table we never allowed.
			c.request(headersFrame{FieldSection: []byte{0x02, 0x00, 0x80}}.append(nil))
		}, ErrCodeQPACKDecompressionFailed},
	}
	for _, tc := range connCases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr, clientTLS)
			tc.run(c)
			c.wantConnClosed(tc.code)
			stillServes(t, addr, clientTLS)
		})
	}

	t.Run("unknown stream type", func(t *testing.T) {
		c := dialRaw(t, addr, clientTLS)
		c.control()
		s := c.openUni(appendStreamType(nil, 0x21+0x1f)) // a reserved type
		var err error
		for err == nil {
			_, err = s.Write(make([]byte, 1024)) // until STOP_SENDING arrives
		}
		var se *quic.StreamError
		if !errors.As(err, &se) || !se.Remote || ErrCode(se.ErrorCode) != ErrCodeStreamCreationError {
			t.Fatalf("write error %v, want STOP_SENDING with H3_STREAM_CREATION_ERROR", err)
		}
		// The connection stays usable.
		s2 := c.request(requestSection(t, goodRequest...))
		b, err := io.ReadAll(s2)
		if err != nil || !strings.Contains(string(b), "hello HTTP/3.0") {
			t.Fatalf("request after the unknown stream: %q, %v", b, err)
		}
	})
}

func TestServerSendsContinue(t *testing.T) {
	checkGoroutines(t)
	_, addr, clientTLS := startServer(t, testHandler())
	c := dialRaw(t, addr, clientTLS)
	c.control()
	s, err := c.qc.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	s.Write(requestSection(t, append(echoRequest, "content-length", "5", "expect", "100-continue")...))
	// The body is sent only after the 100 arrives, as a client that
	// waits for it does.
	fr := newFrameReader(s, 0)
	if code := readResponseStatus(t, fr); code != http.StatusContinue {
		t.Fatalf("first response %d, want 100", code)
	}
	s.Write(append(dataFrame{Length: 5}.append(nil), "hello"...))
	s.Close()
	var body []byte
	var final int
	for {
		f, err := fr.readFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch f := f.(type) {
		case headersFrame:
			if final == 0 {
				rsp, err := decodeResponse(f.FieldSection, 0)
				if err != nil {
					t.Fatal(err)
				}
				final = rsp.StatusCode
			}
		case dataFrame:
			b := make([]byte, f.Length)
			if _, err := io.ReadFull(fr, b); err != nil {
				t.Fatal(err)
			}
			body = append(body, b...)
		}
	}
	if final != 200 || string(body) != "hello" {
		t.Fatalf("final status %d body %q", final, body)
	}
}

// TestRequestBodyShorterThanContentLength is a case of quic-go's
// TestHTTPServerRequestParsing: a body that ends before its
// content-length is malformed (RFC 9114 4.1.2); the handler's read fails
// with an error matching io.ErrUnexpectedEOF, and its answer reaches the
// client, as with net/http's HTTP/2 server (RFC 9114 4.1.2 allows a
// response before the stream is reset).
func TestRequestBodyShorterThanContentLength(t *testing.T) {
	checkGoroutines(t)
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); errors.Is(err, io.ErrUnexpectedEOF) && errorCode(err) == ErrCodeMessageError {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, localhostURL(t, addr, "/"), strings.NewReader("short body"))
			req.ContentLength = 20
			rsp, err := ck.make(t, clientTLS).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			rsp.Body.Close()
			if rsp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want the handler's 400", rsp.StatusCode)
			}
		})
	}
}
