package http3

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic"
)

// TestStreamTryWriteAll checks TryWriteAll on a request stream: DATA
// frames the server reads as the body, quic.ErrWouldBlock without
// queueing anything when the frame exceeds the flow-control window, and
// the error before the request header.
func TestStreamTryWriteAll(t *testing.T) {
	got := make(chan string, 1)
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(b)
	}), func(s *Server) { s.QUICConfig.InitialStreamReceiveWindow = 1 << 10 })
	trace := newRecordingTrace()
	qc, err := quic.DialAddr(context.Background(), addr, clientTLS, &quic.Config{Tracer: trace.tracer()})
	if err != nil {
		t.Fatal(err)
	}
	cc := (&Transport{}).NewClientConn(qc)
	defer cc.CloseWithError(0, "")
	str, err := cc.OpenRequestStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if str.QlogTrace() != qlogwriter.Trace(trace) {
		t.Error("QlogTrace is not the connection's trace")
	}
	if err := str.TryWriteAll([]byte("x")); err == nil {
		t.Fatal("TryWriteAll before SendRequestHeader succeeded")
	}
	req, _ := http.NewRequest(http.MethodPost, localhostURL(t, addr, "/"), nil)
	req.ContentLength = -1 // the body follows on the stream
	if err := str.SendRequestHeader(req); err != nil {
		t.Fatal(err)
	}
	if err := str.TryWriteAll([]byte("hello ")); err != nil {
		t.Fatal(err)
	}
	if err := str.TryWriteAll(make([]byte, 4<<10)); !errors.Is(err, quic.ErrWouldBlock) {
		t.Fatalf("TryWriteAll beyond the window: %v, want ErrWouldBlock", err)
	}
	if err := str.TryWriteAll([]byte("world")); err != nil {
		t.Fatal(err)
	}
	str.Close()
	if b := <-got; b != "hello world" {
		t.Fatalf("server read %q", b)
	}
}
