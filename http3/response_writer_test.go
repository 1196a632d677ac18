package http3

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	quicqlog "github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic"
)

func TestResponseWriterBodies(t *testing.T) {
	checkGoroutines(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16*10) // 640 KiB
	proceed := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>hello</html>")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < len(big); i += 64 << 10 {
			w.Write(big[i : i+64<<10])
		}
	})
	mux.HandleFunc("/flush", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Error(err)
		}
		<-proceed // the client has read "first": it was not held back
		io.WriteString(w, "second")
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if _, err := w.Write([]byte("x")); err != http.ErrBodyNotAllowed {
			t.Errorf("Write after 204: %v", err)
		}
	})
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "abc")
	})
	_, addr, clientTLS := startServer(t, mux)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	base := "https://" + addr

	rsp, err := c.Get(base + "/small")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if rsp.ContentLength != int64(len(b)) || string(b) != "<html>hello</html>" ||
		!strings.HasPrefix(rsp.Header.Get("Content-Type"), "text/html") || rsp.Header.Get("Date") == "" {
		t.Errorf("small: content-length %d, body %q, header %v", rsp.ContentLength, b, rsp.Header)
	}

	rsp, err = c.Head(base + "/small")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if rsp.ContentLength != 18 || len(b) != 0 {
		t.Errorf("HEAD small: content-length %d, %d body bytes", rsp.ContentLength, len(b))
	}

	rsp, err = c.Get(base + "/big")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if rsp.ContentLength != -1 || !bytes.Equal(b, big) {
		t.Errorf("big: content-length %d, %d bytes", rsp.ContentLength, len(b))
	}

	rsp, err = c.Get(base + "/flush")
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(rsp.Body, first); err != nil || string(first) != "first" {
		t.Fatalf("flushed part: %q, %v", first, err)
	}
	close(proceed)
	rest, _ := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if string(rest) != "second" {
		t.Errorf("after flush: %q", rest)
	}

	rsp, err = c.Get(base + "/nocontent")
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusNoContent {
		t.Errorf("status %d", rsp.StatusCode)
	}

	// A handler that writes less than its Content-Length: the client
	// gets the header and what was written, and must not take the short
	// body as complete (H3_MESSAGE_ERROR, RFC 9114 4.1.2).
	rsp, err = c.Get(base + "/short")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if errorCode(err) != ErrCodeMessageError {
		t.Errorf("short body: %v, want H3_MESSAGE_ERROR", err)
	}
}

// TestResponseWriterReadFrom: io.Copy into a response (http.FileServer's
// path) reads into a buffer with room for the DATA frame's header, so each
// frame carries a whole buffer and goes to the stream in one Write; a body
// held back before the header (small, or written before the copy) and HEAD
// keep their usual handling.
func TestResponseWriterReadFrom(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // 300 KiB
	type onlyReader struct{ io.Reader }                         // no WriteTo: io.Copy uses ReadFrom
	trace := newRecordingTrace()
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(io.ReaderFrom); !ok {
			t.Error("the response writer is no io.ReaderFrom")
		}
		if n, err := io.Copy(w, onlyReader{bytes.NewReader(big)}); n != int64(len(big)) || err != nil {
			t.Errorf("io.Copy: %d, %v", n, err)
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, onlyReader{strings.NewReader("<html>hello</html>")})
	})
	longValue := strings.Repeat("v", 2*headerRoom)
	mux.HandleFunc("/longheader", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Long", longValue) // no room for it in front of the data
		io.Copy(w, onlyReader{bytes.NewReader(big)})
	})
	mux.HandleFunc("/prefixed", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "prefix:")
		io.Copy(w, onlyReader{bytes.NewReader(big)})
	})
	var writesMu sync.Mutex
	firstWrites := make(map[quic.StreamID][]byte) // each response's first stream Write
	_, addr, clientTLS := startServer(t, mux, func(s *Server) {
		s.QUICConfig.Tracer = trace.tracer()
		s.testHookResponseWrite = func(id quic.StreamID, p []byte) {
			writesMu.Lock()
			defer writesMu.Unlock()
			if _, ok := firstWrites[id]; !ok {
				firstWrites[id] = slices.Clone(p)
			}
		}
	})
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	get := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, "https://"+addr+path, nil)
		rsp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rsp.Body)
		rsp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return rsp, b
	}
	if _, b := get(http.MethodGet, "/big"); !bytes.Equal(b, big) {
		t.Errorf("big: %d bytes", len(b))
	}
	evs, _, _ := trace.snapshot()
	var sizes []int
	headersLen, bigStream := -1, uint64(0)
	for _, f := range ourFrames(evs) {
		if f.created && f.kind == "data" {
			sizes = append(sizes, f.payload)
		}
		if f.created && f.kind == "headers" && headersLen < 0 {
			headersLen, bigStream = f.length, f.stream
		}
	}
	// The first read leaves room for the HEADERS frame, the others for
	// the DATA frame's header alone.
	first, full := readFromSize-headerRoom, readFromSize-maxDataFrameHeader
	want := []int{first}
	for rest := len(big) - first; rest > 0; rest -= full {
		want = append(want, min(rest, full))
	}
	if !slices.Equal(sizes, want) {
		t.Errorf("DATA frames of /big: %v, want %v", sizes, want)
	}
	// The HEADERS frame goes to the stream in the same Write as the first
	// DATA frame, so that the connection cannot send it in a packet of
	// its own; and so the packet that starts the response carries body
	// bytes too.
	writesMu.Lock()
	firstWrite := firstWrites[quic.StreamID(bigStream)]
	writesMu.Unlock()
	if wantLen := headersLen + len(dataFrame{Length: uint64(first)}.append(nil)) + first; len(firstWrite) != wantLen || FrameType(firstWrite[0]) != frameTypeHeaders ||
		!bytes.Equal(firstWrite[wantLen-first:], big[:first]) {
		t.Errorf("the first stream Write of /big's response has %d bytes, want the %d-byte HEADERS frame, a DATA frame header and %d bytes of body",
			len(firstWrite), headersLen, first)
	}
	if firstSent := firstStreamFrame(evs, bigStream); firstSent == nil || firstSent.Length <= int64(headersLen) {
		t.Errorf("the first STREAM frame of /big's response is %+v, want more than its %d-byte HEADERS frame", firstSent, headersLen)
	}
	if rsp, b := get(http.MethodGet, "/small"); string(b) != "<html>hello</html>" || rsp.ContentLength != int64(len(b)) ||
		!strings.HasPrefix(rsp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("small: content-length %d, body %q, header %v", rsp.ContentLength, b, rsp.Header)
	}
	if rsp, b := get(http.MethodHead, "/small"); len(b) != 0 || rsp.ContentLength != 18 {
		t.Errorf("HEAD small: content-length %d, %d body bytes", rsp.ContentLength, len(b))
	}
	if rsp, b := get(http.MethodGet, "/longheader"); !bytes.Equal(b, big) || rsp.Header.Get("X-Long") != longValue {
		t.Errorf("longheader: %d bytes, X-Long of %d bytes", len(b), len(rsp.Header.Get("X-Long")))
	}
	if _, b := get(http.MethodGet, "/prefixed"); string(b[:7]) != "prefix:" || !bytes.Equal(b[7:], big) {
		t.Errorf("prefixed: %d bytes", len(b))
	}
}

// firstStreamFrame returns the STREAM frame at offset 0 of stream id in
// the first packet sent that carries one, nil if none.
func firstStreamFrame(evs []qlogwriter.Event, id uint64) *quicqlog.StreamFrame {
	for _, ev := range evs {
		sent, ok := ev.(quicqlog.PacketSent)
		if !ok {
			continue
		}
		for _, f := range sent.Frames {
			if sf, ok := f.Frame.(*quicqlog.StreamFrame); ok && uint64(sf.StreamID) == id && sf.Offset == 0 {
				return sf
			}
		}
	}
	return nil
}

// Past largeBodyAfter bytes, ReadFrom reads largeReadSize bytes at a time,
// and each goes to the QUIC stream as one DATA frame in one Write: a large
// file costs the handler a quarter of the wakeups and file reads.
func TestResponseWriterReadFromLargeBody(t *testing.T) {
	huge := bytes.Repeat([]byte("0123456789abcdef"), (largeBodyAfter+600<<10)/16)
	type onlyReader struct{ io.Reader } // no WriteTo: io.Copy uses ReadFrom
	trace := newRecordingTrace()
	mux := http.NewServeMux()
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		if n, err := io.Copy(w, onlyReader{bytes.NewReader(huge)}); n != int64(len(huge)) || err != nil {
			t.Errorf("io.Copy: %d, %v", n, err)
		}
	})
	var writesMu sync.Mutex
	var writes []int // the sizes of the stream Writes
	_, addr, clientTLS := startServer(t, mux, func(s *Server) {
		s.QUICConfig.Tracer = trace.tracer()
		s.testHookResponseWrite = func(id quic.StreamID, p []byte) {
			writesMu.Lock()
			writes = append(writes, len(p))
			writesMu.Unlock()
		}
	})
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	rsp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/huge")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if err != nil || !bytes.Equal(b, huge) {
		t.Fatalf("huge: %d bytes, %v", len(b), err)
	}
	evs, _, _ := trace.snapshot()
	var sizes []int
	for _, f := range ourFrames(evs) {
		if f.created && f.kind == "data" {
			sizes = append(sizes, f.payload)
		}
	}
	want := []int{readFromSize - headerRoom}
	for total := want[0]; total < len(huge); {
		size := readFromSize - maxDataFrameHeader
		if total >= largeBodyAfter {
			size = largeReadSize - maxDataFrameHeader
		}
		n := min(len(huge)-total, size)
		want = append(want, n)
		total += n
	}
	if !slices.Equal(sizes, want) {
		t.Errorf("DATA frames of /huge: %v, want %v", sizes, want)
	}
	writesMu.Lock()
	defer writesMu.Unlock()
	if len(writes) != len(want) || slices.Max(writes) <= writeChunk {
		t.Errorf("stream Writes of /huge: %v; want one per DATA frame, the large ones whole", writes)
	}
}
