package http3

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
	"github.com/turboretry/turboretry/quic"
)

// cancelReadCode is the code of the CancelRead calls below, one no
// HTTP/3 error path uses.
const cancelReadCode = 0x4a3b

// h3Stream is a request stream of either implementation with the calls
// the CancelRead tests make; cancelRead hides quic-go's code type.
type h3Stream struct {
	io.ReadWriteCloser
	cancelRead func(quic.StreamErrorCode)
	ctx        func() context.Context
}

// TestCancelReadKeepsSendSide: a local CancelRead stops only the receive
// side (STOP_SENDING with its code; Read then fails with a local *Error
// of that code), as in quic-go. What was written before it, what is
// written after it and the FIN all reach the peer, which learns of the
// STOP_SENDING (its send side's context ends). A WebTransport session
// closing its receive side must not lose its last messages. Run as the
// server's taken-over Stream against quic-go's client and as our
// RequestStream against quic-go's server; quic-go against itself and
// ours against ours check the same expectations.
func TestCancelReadKeepsSendSide(t *testing.T) {
	checkGoroutines(t)
	for _, sp := range serverPeers {
		for _, client := range []string{"ours", "quic-go"} {
			t.Run("server cancels/"+sp.name+"-server/"+client+"-client", func(t *testing.T) {
				testServerCancelRead(t, sp, client)
			})
			t.Run("client cancels/"+sp.name+"-server/"+client+"-client", func(t *testing.T) {
				testClientCancelRead(t, sp, client)
			})
		}
	}
}

// openStream opens a request stream of the client implementation
// (ours or quic-go's) to addr and sends req's header.
func openStream(t *testing.T, client, addr string, clientTLS *tls.Config, req *http.Request) (reqStream, h3Stream) {
	t.Helper()
	var rs reqStream
	var s h3Stream
	if client == "ours" {
		str, err := dialOurClientConn(t, addr, clientTLS, &Transport{}).OpenRequestStream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = str.SetDeadline(time.Now().Add(10 * time.Second))
		rs, s = str, h3Stream{str, str.CancelRead, str.Context}
	} else {
		str, err := dialQuicGoClientConn(t, addr, clientTLS, &quicgohttp3.Transport{}).OpenRequestStream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = str.SetDeadline(time.Now().Add(10 * time.Second))
		rs, s = str, h3Stream{str, func(c quic.StreamErrorCode) { str.CancelRead(quicgo.StreamErrorCode(c)) }, str.Context}
	}
	if err := rs.SendRequestHeader(req); err != nil {
		t.Fatal(err)
	}
	return rs, s
}

// cancelThenWrite writes before, cancels the receive side, checks that
// Read fails with our local cancellation, writes after and closes.
func cancelThenWrite(s h3Stream, before, after string) error {
	if before != "" {
		if _, err := io.WriteString(s, before); err != nil {
			return fmt.Errorf("write before CancelRead: %w", err)
		}
	}
	s.cancelRead(cancelReadCode)
	if _, err := s.Read(make([]byte, 1)); !isH3Error(err, cancelReadCode, false) {
		return fmt.Errorf("Read after CancelRead: %v, want the local cancellation", err)
	}
	if _, err := io.WriteString(s, after); err != nil {
		return fmt.Errorf("write after CancelRead: %w", err)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("Close after CancelRead: %w", err)
	}
	return nil
}

// waitDone waits for the STOP_SENDING to end ctx, bounded so a missing
// one fails rather than hangs.
func waitDone(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the send side's context did not end: no STOP_SENDING")
	}
}

// testServerCancelRead: the handler takes its stream over, writes,
// cancels reading, writes again and closes; the client reads it all.
func testServerCancelRead(t *testing.T, sp serverPeer, client string) {
	handlerErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		var s h3Stream
		switch hs := w.(type) {
		case HTTPStreamer:
			str, err := hs.HTTPStream()
			if err != nil {
				handlerErr <- err
				return
			}
			_ = str.SetDeadline(time.Now().Add(10 * time.Second))
			s = h3Stream{str, str.CancelRead, str.Context}
		case quicgohttp3.HTTPStreamer:
			str, err := hs.HTTPStream()
			if err != nil {
				handlerErr <- err
				return
			}
			_ = str.SetDeadline(time.Now().Add(10 * time.Second))
			s = h3Stream{str, func(c quic.StreamErrorCode) { str.CancelRead(quicgo.StreamErrorCode(c)) }, str.Context}
		}
		handlerErr <- cancelThenWrite(s, "before ", "after")
	})
	addr, clientTLS := sp.start(t, h, nil, nil)
	rs, s := openStream(t, client, addr, clientTLS, mustRequest(t, localhostURL(t, addr, "/")))
	if _, err := rs.ReadResponse(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if herr := <-handlerErr; herr != nil {
		t.Errorf("handler: %v", herr)
	}
	if err != nil || string(got) != "before after" {
		t.Fatalf("client read %q, %v; want %q and the FIN", got, err, "before after")
	}
	if err := waitDone(s.ctx()); err != nil {
		t.Fatal(err)
	}
}

// testClientCancelRead: the client writes, cancels reading the
// response, writes again and closes; the handler reads the whole
// request body.
func testClientCancelRead(t *testing.T, sp serverPeer, client string) {
	type result struct {
		body []byte
		err  error
	}
	got := make(chan result, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = waitDone(r.Context())
		}
		got <- result{body, err}
	})
	addr, clientTLS := sp.start(t, h, nil, nil)
	// A GET: without a body to send, both clients would declare a POST's
	// length 0, but the content written after the header follows.
	rs, s := openStream(t, client, addr, clientTLS, mustRequest(t, localhostURL(t, addr, "/")))
	if _, err := io.WriteString(s, "before "); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.ReadResponse(); err != nil {
		t.Fatal(err)
	}
	if err := cancelThenWrite(s, "", "after"); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || string(r.body) != "before after" {
		t.Fatalf("handler read %q, %v; want %q and the end of the request", r.body, r.err, "before after")
	}
}
