package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/turboretry/turboretry/internal/testutil"
)

// rawCodec lets the test's gRPC service carry raw bytes, without
// generated protobuf code: the framing and the status are what the proxy
// must carry, not the message encoding.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*p = append([]byte(nil), data...)
	return nil
}

// testService is a gRPC service: Echo (unary) answers "echo:" and the
// request; Count (server streaming) sends the request's number of
// messages; Fail (unary) sends its header, then fails, so its status
// comes in trailers; Missing fails before any header (a trailers-only
// response, the status in the header section).
var testService = grpc.ServiceDesc{
	ServiceName: "turboretry.test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Echo", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			return append([]byte("echo:"), in...), nil
		}},
		{MethodName: "Fail", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			if err := grpc.SendHeader(ctx, metadata.Pairs("x-started", "yes")); err != nil {
				return nil, err
			}
			return nil, status.Error(codes.FailedPrecondition, "no such thing: "+string(in))
		}},
		{MethodName: "Missing", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			return nil, status.Error(codes.NotFound, "missing")
		}},
	},
	Streams: []grpc.StreamDesc{{StreamName: "Count", ServerStreams: true, Handler: func(_ any, stream grpc.ServerStream) error {
		var in []byte
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		var n int
		fmt.Sscan(string(in), &n)
		for i := range n {
			if err := stream.SendMsg([]byte(fmt.Sprint("message ", i))); err != nil {
				return err
			}
		}
		return nil
	}}},
}

// startGRPCUpstream serves testService over h2c (gRPC's plaintext HTTP/2
// with prior knowledge) on the loopback.
func startGRPCUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	s.RegisterService(&testService, struct{}{})
	testutil.Serve(t, func() { s.Serve(ln) }, s.Stop)
	return "h2c://" + ln.Addr().String()
}

// grpcFrame is a length-prefixed message (gRPC over HTTP/2, "Length-Prefixed-Message").
func grpcFrame(msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// readGRPCMessages parses the length-prefixed messages of a response body.
func readGRPCMessages(r io.Reader) ([]string, error) {
	var out []string
	for {
		var h [5]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		if h[0] != 0 {
			return out, errors.New("compressed message")
		}
		msg := make([]byte, binary.BigEndian.Uint32(h[1:]))
		if _, err := io.ReadFull(r, msg); err != nil {
			return out, err
		}
		out = append(out, string(msg))
	}
}

type grpcResult struct {
	header    http.Header
	messages  []string
	status    string // grpc-status
	message   string // grpc-message
	inTrailer bool   // the status came in the trailer section
}

// grpcCall makes a gRPC call by hand over our HTTP/3 client.
func grpcCall(t *testing.T, c *http.Client, f *front, method, msg string) grpcResult {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(f.URL(), "/")+"/turboretry.test.Echo/"+method, bytes.NewReader(grpcFrame(msg)))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	rsp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK || rsp.Header.Get("Content-Type") != "application/grpc" {
		t.Fatalf("%s: %d %q", method, rsp.StatusCode, rsp.Header.Get("Content-Type"))
	}
	msgs, err := readGRPCMessages(rsp.Body)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	r := grpcResult{header: rsp.Header, messages: msgs}
	if v := rsp.Trailer.Get("Grpc-Status"); v != "" {
		r.status, r.message, r.inTrailer = v, rsp.Trailer.Get("Grpc-Message"), true
	} else {
		// Trailers-only: the status in the header section.
		r.status, r.message = rsp.Header.Get("Grpc-Status"), rsp.Header.Get("Grpc-Message")
	}
	return r
}

// TestGRPC: a google.golang.org/grpc server over h2c, reached through the
// proxy by an HTTP/3 client making gRPC calls by hand: unary, server
// streaming, and failures whose status comes in the trailers (after a
// header) or in a trailers-only response.
func TestGRPC(t *testing.T) {
	checkNoLeak(t)
	f := startFront(t, Config{Upstreams: []string{startGRPCUpstream(t)}}, nil)
	c := f.client(t, clientH3)

	r := grpcCall(t, c, f, "Echo", "hi")
	if r.status != "0" || !r.inTrailer || len(r.messages) != 1 || r.messages[0] != "echo:hi" {
		t.Errorf("Echo: %+v", r)
	}
	r = grpcCall(t, c, f, "Count", "3")
	if r.status != "0" || !r.inTrailer || strings.Join(r.messages, "|") != "message 0|message 1|message 2" {
		t.Errorf("Count: %+v", r)
	}
	r = grpcCall(t, c, f, "Fail", "x")
	if r.status != fmt.Sprint(int(codes.FailedPrecondition)) || !r.inTrailer || r.message != "no such thing: x" || r.header.Get("X-Started") != "yes" || len(r.messages) != 0 {
		t.Errorf("Fail: %+v", r)
	}
	r = grpcCall(t, c, f, "Missing", "")
	if r.status != fmt.Sprint(int(codes.NotFound)) || r.message != "missing" {
		t.Errorf("Missing: %+v", r)
	}
	if got := f.metric(t, "turboretry_proxy_upstream_requests_total", map[string]string{"code": "200"}); got != 4 {
		t.Errorf("upstream 200s: %v, want 4", got)
	}
}
