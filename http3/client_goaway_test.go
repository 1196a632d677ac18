package http3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// rawServerConn is one connection of rawServer: its control stream and
// the request streams it accepted, with their decoded request.
type rawServerConn struct {
	qc   *quic.Conn
	ctrl *quic.SendStream
	reqs chan rawRequest
}

type rawRequest struct {
	str *quic.Stream
	req *http.Request
}

// startRawServer runs a hand-written HTTP/3 server on loopback, to send
// GOAWAY frames our Server never would. Its first connection is handed
// to first; later connections answer each request with
// "METHOD PATH BODY" and report "PATH" on served.
func startRawServer(t *testing.T, first func(*rawServerConn)) (addr string, clientTLS *tls.Config, served <-chan string) {
	t.Helper()
	serverTLS, clientTLS := testCert(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quic.Listen(pc, ConfigureTLSConfig(serverTLS), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 0; ; n++ {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			c := &rawServerConn{qc: qc, reqs: make(chan rawRequest, 8)}
			if c.ctrl, err = qc.OpenUniStream(); err != nil {
				t.Error(err)
				return
			}
			c.ctrl.Write(settings{}.append(appendStreamType(nil, streamTypeControl)))
			wg.Go(func() { // the client's control and QPACK streams
				for {
					rs, err := qc.AcceptUniStream(context.Background())
					if err != nil {
						return
					}
					wg.Go(func() { io.Copy(io.Discard, rs) })
				}
			})
			wg.Go(func() { c.acceptRequests(t, n == 0, out) })
			if n == 0 {
				wg.Go(func() { first(c) })
			}
		}
	})
	t.Cleanup(func() {
		ln.Close()
		pc.Close()
		wg.Wait()
	})
	return pc.LocalAddr().String(), clientTLS, out
}

// acceptRequests reads each request stream's header; on the first
// connection it hands the request over, on others it answers it.
func (c *rawServerConn) acceptRequests(t *testing.T, first bool, served chan<- string) {
	defer close(c.reqs)
	for {
		str, err := c.qc.AcceptStream(context.Background())
		if err != nil {
			return
		}
		fr := newFrameReader(str, 0)
		check := &requestStreamChecker{}
		req, err := testServerConn(1<<16).readRequestHeader(fr, check, time.Time{}, nil)
		if err != nil {
			t.Errorf("raw server: reading a request: %v", err)
			return
		}
		req.Body = io.NopCloser(&bodyReader{fr: fr, check: check, isRequest: true, contentLength: -1})
		if first {
			c.reqs <- rawRequest{str, req}
			continue
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			t.Errorf("raw server: reading a body: %v", err)
			return
		}
		served <- req.URL.Path // before the answer: the client's response implies it
		answer(t, str, fmt.Sprintf("%s %s %s", req.Method, req.URL.Path, body))
	}
}

// answer sends a 200 response with body and ends the stream.
func answer(t *testing.T, str *quic.Stream, body string) {
	section, err := newFieldEncoder().encodeResponse(nil, http.StatusOK, http.Header{})
	if err != nil {
		t.Error(err)
		return
	}
	b := headersFrame{FieldSection: section}.append(nil)
	b = append(dataFrame{Length: uint64(len(body))}.append(b), body...)
	str.Write(b)
	str.Close()
}

// TestGoAwayRetriesExcludedRequests: RFC 9114 section 5.2. The server
// holds request A (stream 0), receives B, C and D (streams 4, 8, 12) and
// sends GOAWAY(4) without ever resetting them. The client must cancel
// B, C and D at once and send them again on a new connection when their
// body can be replayed (B: none, C: GetBody), fail D (a body without
// GetBody), still complete A on the old connection, and send a new
// request on the new connection.
func TestGoAwayRetriesExcludedRequests(t *testing.T) {
	checkGoroutines(t)
	aArrived := make(chan struct{})
	first := func(c *rawServerConn) {
		a := <-c.reqs
		close(aArrived)
		var excluded []*quic.Stream
		for range 3 {
			r, ok := <-c.reqs
			if !ok {
				return
			}
			excluded = append(excluded, r.str)
		}
		c.ctrl.Write(goAwayFrame{ID: 4}.append(nil))
		// A client that ignores GOAWAY would leave B, C and D waiting for
		// ever; after fallback the connection closes, so the test fails
		// instead of hanging. It is no time limit on a correct client.
		fallback := time.NewTimer(10 * time.Second)
		defer fallback.Stop()
		for _, str := range excluded {
			select {
			case <-str.Context().Done(): // the client's STOP_SENDING
			case <-fallback.C:
				c.qc.CloseWithError(quic.ApplicationErrorCode(ErrCodeNoError), "")
				return
			}
		}
		answer(t, a.str, "GET /a ")
	}
	addr, clientTLS, served := startRawServer(t, first)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	base := "https://" + addr

	type result struct {
		body string
		err  error
	}
	do := func(req *http.Request, to chan<- result) {
		rsp, err := client.Do(req)
		if err != nil {
			to <- result{"", err}
			return
		}
		b, err := io.ReadAll(rsp.Body)
		rsp.Body.Close()
		to <- result{string(b), err}
	}
	resA, resB, resC, resD := make(chan result, 1), make(chan result, 1), make(chan result, 1), make(chan result, 1)
	reqA, _ := http.NewRequest(http.MethodGet, base+"/a", nil)
	go do(reqA, resA)
	<-aArrived
	reqB, _ := http.NewRequest(http.MethodGet, base+"/b", nil)
	reqC, _ := http.NewRequest(http.MethodPost, base+"/c", strings.NewReader("replayed"))
	reqD, _ := http.NewRequest(http.MethodPost, base+"/d", io.NopCloser(strings.NewReader("once")))
	if reqC.GetBody == nil || reqD.GetBody != nil {
		t.Fatal("test requests: C needs GetBody, D must not have it")
	}
	go do(reqB, resB)
	go do(reqC, resC)
	go do(reqD, resD)

	if r := <-resB; r.err != nil || r.body != "GET /b " {
		t.Errorf("B: %q, %v; want it retried on a new connection", r.body, r.err)
	}
	if r := <-resC; r.err != nil || r.body != "POST /c replayed" {
		t.Errorf("C: %q, %v; want it retried with its body from GetBody", r.body, r.err)
	}
	if r := <-resD; r.err == nil || !notProcessed(r.err) {
		t.Errorf("D: %q, %v; want the not-processed error (its body cannot be replayed)", r.body, r.err)
	}
	if r := <-resA; r.err != nil || r.body != "GET /a " {
		t.Errorf("A (below the GOAWAY ID): %q, %v; want it completed", r.body, r.err)
	}
	if b, err := get(t, client, base+"/e"); err != nil || b != "GET /e " {
		t.Errorf("request after GOAWAY: %q, %v", b, err)
	}
	got := map[string]int{}
	for len(served) > 0 {
		got[<-served]++
	}
	if len(got) != 3 || got["/b"] != 1 || got["/c"] != 1 || got["/e"] != 1 {
		t.Errorf("second connection served %v, want /b, /c and /e once each", got)
	}
}

func TestReplayable(t *testing.T) {
	excluded := &notProcessedError{errors.New("reset")}
	rejected := &Error{Remote: true, ErrorCode: ErrCodeRequestRejected}
	get, _ := http.NewRequest(http.MethodGet, "https://example.com/", nil)
	withGetBody, _ := http.NewRequest(http.MethodPost, "https://example.com/", strings.NewReader("body"))
	noGetBody, _ := http.NewRequest(http.MethodPost, "https://example.com/", io.NopCloser(strings.NewReader("body")))
	failingGetBody := withGetBody.Clone(context.Background())
	failingGetBody.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
	for _, c := range []struct {
		name    string
		req     *http.Request
		err     error
		want    string // "same", "copy", "none" or "error"
		wantErr bool
	}{
		{"never sent, with a body", noGetBody, fmt.Errorf("x: %w", errConnGoingAway), "same", false},
		{"excluded by GOAWAY, no body", get, excluded, "same", false},
		{"rejected, no body", get, rejected, "same", false},
		{"excluded, GetBody", withGetBody, excluded, "copy", false},
		{"excluded, no GetBody", noGetBody, excluded, "none", true}, // net/http's "define Request.GetBody" error
		{"connection closed before the stream", noGetBody, &connUnusableError{errors.New("idle")}, "same", false},
		{"excluded, GetBody fails", failingGetBody, excluded, "none", true},
		{"local REQUEST_REJECTED", get, &Error{ErrorCode: ErrCodeRequestRejected}, "none", false},
		{"other error", get, errors.New("boom"), "none", false},
	} {
		next, err := replayable(c.req, c.err)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v", c.name, err)
		}
		if err != nil && c.req == noGetBody && !errors.Is(err, excluded) {
			t.Errorf("%s: the error %v does not wrap the cause", c.name, err)
		}
		switch c.want {
		case "same":
			if next != c.req {
				t.Errorf("%s: got %p, want the request itself", c.name, next)
			}
		case "none":
			if next != nil {
				t.Errorf("%s: replayed, want no retry", c.name)
			}
		case "copy":
			if next == nil || next == c.req || next.Body == c.req.Body {
				t.Errorf("%s: want a copy with a fresh body", c.name)
				continue
			}
			if b, _ := io.ReadAll(next.Body); string(b) != "body" {
				t.Errorf("%s: replayed body %q", c.name, b)
			}
		}
	}
}
