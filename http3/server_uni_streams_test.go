package http3

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/quic"
)

// wantStopSending waits until the server stops reading s and checks the
// code of its STOP_SENDING.
func wantStopSending(t *testing.T, s *quic.SendStream, code ErrCode) {
	t.Helper()
	<-s.Context().Done()
	var se *quic.StreamError
	if err := context.Cause(s.Context()); !errors.As(err, &se) || !se.Remote || ErrCode(se.ErrorCode) != code {
		t.Fatalf("send side ended with %v, want the server's STOP_SENDING with %s", err, code)
	}
}

// helloOn sends a GET for /hello on c and checks the answer.
func (c *rawConn) helloOn() {
	c.t.Helper()
	b, err := io.ReadAll(c.request(requestSection(c.t, goodRequest...)))
	if err != nil || !strings.Contains(string(b), "hello HTTP/3.0") {
		c.t.Fatalf("request: %q, %v", b, err)
	}
}

// TestUniStreamTimeouts: a unidirectional stream whose type never
// completes is stopped with H3_STREAM_CREATION_ERROR after
// UniStreamTimeout while the connection keeps serving; a control stream
// whose SETTINGS never completes closes the connection with
// H3_MISSING_SETTINGS; a complete SETTINGS clears the deadline.
func TestUniStreamTimeouts(t *testing.T) {
	checkGoroutines(t)
	const timeout = 50 * time.Millisecond
	s, addr, clientTLS := startServer(t, testHandler(), func(s *Server) { s.UniStreamTimeout = timeout })

	c := dialRaw(t, addr, clientTLS)
	ctrl := c.control()
	goroutines0 := runtime.NumGoroutine()
	// The server allows 100 uni streams (the QUIC default); the control
	// stream has one, the rest stall in their type.
	const stalledStreams = 99
	var stalled []*quic.SendStream
	for range stalledStreams {
		stalled = append(stalled, c.openUni([]byte{0x40})) // the first byte of a two-byte type
	}
	c.helloOn()
	benignFetches(t, addr, clientTLS)
	if n := runtime.NumGoroutine() - goroutines0; n > stalledStreams+32 {
		t.Errorf("%d more goroutines for %d stalled streams", n, stalledStreams)
	}
	for _, str := range stalled {
		wantStopSending(t, str, ErrCodeStreamCreationError)
	}
	if n := s.Stats().Refused[RefusedUniStreamTimeout]; n != stalledStreams {
		t.Fatalf("uni_stream_timeout counted %d times, want %d", n, stalledStreams)
	}
	// The control stream's SETTINGS came at once: its deadline is gone.
	time.Sleep(3 * timeout)
	c.helloOn()
	if _, err := ctrl.Write(goAwayFrame{ID: 0}.append(nil)); err != nil {
		t.Fatalf("control stream after the timeout: %v", err)
	}
	if c.qc.Context().Err() != nil {
		t.Fatalf("connection closed: %v", context.Cause(c.qc.Context()))
	}

	c2 := dialRaw(t, addr, clientTLS)
	partial := appendFrameHeader(appendStreamType(nil, streamTypeControl), frameTypeSettings, 10)
	c2.openUni(append(partial, 0x06, 0x44)) // 2 of the 10 bytes
	c2.wantConnClosed(ErrCodeMissingSettings)
	if n := s.Stats().Refused[RefusedSettingsTimeout]; n != 1 {
		t.Fatalf("settings_timeout counted %d times, want 1", n)
	}
	stillServes(t, addr, clientTLS)
}

// TestQPACKStreamValidation: the peer's QPACK streams are checked per
// RFC 9204 against our dynamic table capacity of 0; each violation closes
// the connection with its code, and valid instructions do not.
func TestQPACKStreamValidation(t *testing.T) {
	checkGoroutines(t)
	// decoderRead receives the client port of each connection whose QPACK
	// decoder stream type the server has read.
	decoderRead := make(chan int, 16)
	s, addr, clientTLS := startServer(t, testHandler(), func(s *Server) {
		s.testHookStreamType = func(qc *quic.Conn, t StreamType) {
			if t == streamTypeQPACKDecoder {
				select {
				case decoderRead <- qc.RemoteAddr().(*net.UDPAddr).Port:
				default:
				}
			}
		}
	})
	encoder := func(b ...byte) []byte { return append(appendStreamType(nil, streamTypeQPACKEncoder), b...) }
	decoder := func(b ...byte) []byte { return append(appendStreamType(nil, streamTypeQPACKDecoder), b...) }

	t.Run("valid instructions", func(t *testing.T) {
		c := dialRaw(t, addr, clientTLS)
		c.control()
		c.openUni(encoder(0x20))                                    // Set Dynamic Table Capacity 0
		c.openUni(decoder(appendPrefixInt(nil, 0x40, 6, 1<<20)...)) // Stream Cancellation
		c.helloOn()
		c.helloOn()
		if c.qc.Context().Err() != nil {
			t.Fatalf("connection closed: %v", context.Cause(c.qc.Context()))
		}
	})

	cases := []struct {
		name string
		run  func(c *rawConn)
		code ErrCode
	}{
		{"dynamic table capacity 1", func(c *rawConn) { c.openUni(encoder(0x21)) }, ErrCodeQPACKEncoderStreamError},
		{"insert", func(c *rawConn) { c.openUni(encoder(0xc0|17, 0x01, 'x')) }, ErrCodeQPACKEncoderStreamError},
		{"duplicate", func(c *rawConn) { c.openUni(encoder(0x00)) }, ErrCodeQPACKEncoderStreamError},
		{"section acknowledgment", func(c *rawConn) { c.openUni(decoder(0x80)) }, ErrCodeQPACKDecoderStreamError},
		{"insert count increment", func(c *rawConn) { c.openUni(decoder(0x01)) }, ErrCodeQPACKDecoderStreamError},
		{"two encoder streams", func(c *rawConn) { c.openUni(encoder()); c.openUni(encoder()) }, ErrCodeStreamCreationError},
		{"two decoder streams", func(c *rawConn) { c.openUni(decoder()); c.openUni(decoder()) }, ErrCodeStreamCreationError},
		{"encoder stream closed", func(c *rawConn) { c.openUni(encoder(0x20)).Close() }, ErrCodeClosedCriticalStream},
		{"decoder stream closed", func(c *rawConn) { c.openUni(decoder()).Close() }, ErrCodeClosedCriticalStream},
		{"decoder stream reset", func(c *rawConn) {
			s := c.openUni(decoder())
			// A reset that overtakes the type is ignored (RFC 9114
			// section 6.2): reset only once the server has read it.
			for local := c.qc.LocalAddr().(*net.UDPAddr).Port; <-decoderRead != local; {
			}
			s.CancelWrite(0)
		}, ErrCodeClosedCriticalStream},
	}
	before := s.Stats().Refused[RefusedConnectionError]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr, clientTLS)
			c.control()
			tc.run(c)
			c.wantConnClosed(tc.code)
		})
	}
	if n := s.Stats().Refused[RefusedConnectionError] - before; n != uint64(len(cases)) {
		t.Fatalf("connection_error counted %d times for %d closes", n, len(cases))
	}
	stillServes(t, addr, clientTLS)
}

// TestClientQPACKStreamValidation: our Transport applies the same checks
// to a server's QPACK streams. The bad encoder stream goes out only once
// the request has arrived: a connection our client closed before it sent
// the request would be dialed again and the request answered there.
func TestClientQPACKStreamValidation(t *testing.T) {
	checkGoroutines(t)
	addr, clientTLS, _ := startRawServer(t, func(c *rawServerConn) {
		if _, ok := <-c.reqs; !ok {
			t.Error("raw server: the connection ended before the request arrived")
			return
		}
		s, err := c.qc.OpenUniStream()
		if err != nil {
			t.Error(err)
			return
		}
		s.Write(append(appendStreamType(nil, streamTypeQPACKEncoder), 0x3f, 0xe1, 0x1f)) // capacity 4096
	})
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/", nil)
	if _, err := tr.RoundTrip(req); errorCode(err) != ErrCodeQPACKEncoderStreamError {
		t.Fatalf("request on a connection with a bad encoder stream: %v, want our QPACK_ENCODER_STREAM_ERROR close", err)
	}
}

// TestServerIdleConnHoldsNoGoroutine: once the client's SETTINGS is read,
// the server holds no goroutine for the idle connection (none accepting
// streams, none reading its quiet control stream), and frames
// the client sends later are still read and checked (a GOAWAY, then one
// with a larger ID: H3_ID_ERROR).
func TestServerIdleConnHoldsNoGoroutine(t *testing.T) {
	checkGoroutines(t)
	_, addr, clientTLS := startServer(t, testHandler())
	c := dialRaw(t, addr, clientTLS)
	ctrl := c.control()
	c.helloOn()
	// The request's goroutine ends after the client has its response,
	// and on a loaded machine that can take seconds: the bound is a
	// hang guard only.
	waitNoControlReader := func() {
		t.Helper()
		testutil.WaitFor(t, "no goroutine to serve the idle connection", func() bool {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			return !strings.Contains(stacks, "http3.(*uniStreams)") && !strings.Contains(stacks, "http3.(*serverConn)")
		})
	}
	waitNoControlReader()
	if _, err := ctrl.Write(goAwayFrame{ID: 8}.append(nil)); err != nil {
		t.Fatal(err)
	}
	c.helloOn()
	waitNoControlReader()
	if c.qc.Context().Err() != nil {
		t.Fatalf("connection closed after a valid GOAWAY: %v", context.Cause(c.qc.Context()))
	}
	if _, err := ctrl.Write(goAwayFrame{ID: 12}.append(nil)); err != nil {
		t.Fatal(err)
	}
	c.wantConnClosed(ErrCodeIDError)
}
