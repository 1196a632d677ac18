package http3

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestReadHeaderTimeout opens request streams that never complete their
// header section: one with nothing but the start of a HEADERS frame, one
// that trickles a long one. The server must reset both with H3_REQUEST_INCOMPLETE
// after ReadHeaderTimeout, not wait for the idle timeout, and end their
// goroutines; a request on a second stream of the same connection, whose
// header arrives at once, is answered normally.
func TestReadHeaderTimeout(t *testing.T) {
	checkGoroutines(t)
	s, addr, clientTLS := startServer(t, testHandler(), func(s *Server) {
		s.ReadHeaderTimeout = 50 * time.Millisecond
	})
	c := dialRaw(t, addr, clientTLS)
	c.control()
	full := requestSection(t, goodRequest...)

	stalled, err := c.qc.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stalled.Write(full[:3]); err != nil { // frame header and one byte
		t.Fatal(err)
	}
	// A HEADERS frame of 1000 bytes, sent one byte at a time, each well
	// within the timeout: the timeout bounds the whole header section,
	// not the wait for each byte.
	trickled, err := c.qc.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	const trickleLen = 1000
	if _, err := trickled.Write(appendFrameHeader(nil, frameTypeHeaders, trickleLen)); err != nil {
		t.Fatal(err)
	}

	// A complete request on the same connection is served.
	raw, err := io.ReadAll(c.request(full))
	if err != nil {
		t.Fatal(err)
	}
	if code := readResponseStatus(t, newFrameReader(bytes.NewReader(raw), 0)); code != 200 {
		t.Fatalf("complete request answered %d", code)
	}

	sent := 0
	for ; sent < trickleLen-1; sent++ { // never the last byte
		if _, err := trickled.Write([]byte{0}); err != nil {
			break // the server's STOP_SENDING: it gave up on the header
		}
		time.Sleep(5 * time.Millisecond)
	}
	if sent == trickleLen-1 {
		t.Fatalf("the server read %d bytes of a trickled header section without resetting it", sent)
	}
	wantStreamReset(t, stalled, ErrCodeRequestIncomplete)
	wantStreamReset(t, trickled, ErrCodeRequestIncomplete)
	if n := s.Stats().Refused[RefusedHeaderTimeout]; n != 2 {
		t.Fatalf("header_timeout counted %d times, want 2", n)
	}

	// The handleRequest goroutines returned: no request is active.
	for {
		s.mu.Lock()
		active := 0
		for sc := range s.conns {
			sc.mu.Lock()
			active += sc.active
			sc.mu.Unlock()
		}
		s.mu.Unlock()
		if active == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReadHeaderTimeoutSetting(t *testing.T) {
	for _, c := range []struct{ set, want time.Duration }{
		{0, DefaultReadHeaderTimeout},
		{-1, 0},
		{time.Second, time.Second},
	} {
		if got := (&Server{ReadHeaderTimeout: c.set}).readHeaderTimeout(); got != c.want {
			t.Errorf("ReadHeaderTimeout %v: applied %v, want %v", c.set, got, c.want)
		}
	}
}
