package http3

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
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
