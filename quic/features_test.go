package quic

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

func TestVersion2WithQuicGo(t *testing.T) {
	ctx := testCtx(t)
	// quic-go server, our client speaking only v2.
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), &quicgo.Config{Versions: []quicgo.Version{quicgo.Version2, quicgo.Version1}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), &Config{Versions: []Version{Version2}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	if v := c.ConnectionState().Version; v != Version2 {
		t.Fatalf("version %s", v)
	}
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := sc.ConnectionState().Version; v != quicgo.Version2 {
		t.Fatalf("quic-go version %s", v)
	}
	// quic-go client with v2 against our server.
	addr := ourEchoServer(t, ctx, &Config{Versions: []Version{Version2}})
	qc, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{Versions: []quicgo.Version{quicgo.Version2}})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	s, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(50_000, 8))
}

func TestVersionNegotiationFailure(t *testing.T) {
	ctx := testCtx(t)
	// The server speaks only v2, the client only v1: the server answers
	// with Version Negotiation, v2 and a reserved version (RFC 9000
	// section 6.3, as quic-go's server does), and the dial fails.
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{Versions: []Version{Version2}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = DialAddr(ctx, ln.Addr().String(), clientTLS(t), &Config{Versions: []Version{Version1}})
	var ve *VersionNegotiationError
	if !errors.As(err, &ve) || len(ve.Theirs) != 2 || ve.Theirs[0] != Version2 || !wire.Version(ve.Theirs[1]).IsReserved() {
		t.Fatalf("got %v, want VersionNegotiationError listing v2 and a reserved version", err)
	}
}

func TestVersionNegotiationSwitch(t *testing.T) {
	ctx := testCtx(t)
	// The client prefers v1; the server speaks only v2 and answers with
	// Version Negotiation; the client starts over in v2. Our server's
	// version_information confirms v2; quic-go's server sends none, and
	// RFC 9368 section 4 makes a client that reacted to Version
	// Negotiation close then (VERSION_NEGOTIATION_ERROR).
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			var addr string
			if peer == "ours" {
				ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), &Config{Versions: []Version{Version2}})
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				addr = ln.Addr().String()
			} else {
				ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), &quicgo.Config{Versions: []quicgo.Version{quicgo.Version2}})
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				addr = ln.Addr().String()
			}
			c, err := DialAddr(ctx, addr, clientTLS(t), &Config{Versions: []Version{Version1, Version2}})
			if peer == "quic-go" {
				var te *TransportError
				if !errors.As(err, &te) || te.ErrorCode != TransportErrorCode(qerr.VersionNegotiationError) {
					t.Fatalf("dial: %v, want VERSION_NEGOTIATION_ERROR", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			if v := c.ConnectionState().Version; v != Version2 {
				t.Fatalf("version %s, want v2", v)
			}
		})
	}
}

func TestDatagramsWithQuicGo(t *testing.T) {
	ctx := testCtx(t)
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), &quicgo.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), &Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.ConnectionState(); !st.SupportsDatagrams.Local || !st.SupportsDatagrams.Remote {
		t.Fatalf("datagram support %+v", st.SupportsDatagrams)
	}
	// Datagrams are unreliable, but loopback without load delivers; resend
	// until one arrives (hang-guarded by ctx).
	go func() {
		for ctx.Err() == nil {
			if err := c.SendDatagram([]byte("dgram")); err != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-sc.Context().Done():
				return
			default:
			}
			<-afterMs(5)
		}
	}()
	d, err := sc.ReceiveDatagram(ctx)
	if err != nil || string(d) != "dgram" {
		t.Fatalf("quic-go received %q, %v", d, err)
	}
	if err := sc.SendDatagram([]byte("back")); err != nil {
		t.Fatal(err)
	}
	d, err = c.ReceiveDatagram(ctx)
	if err != nil || string(d) != "back" {
		t.Fatalf("we received %q, %v", d, err)
	}
	var tooLarge *DatagramTooLargeError
	if err := c.SendDatagram(make([]byte, 2000)); !errors.As(err, &tooLarge) {
		t.Fatalf("oversized datagram: %v", err)
	}
}

func TestManyConcurrentStreams(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			var addr string
			if peer == "ours" {
				addr = ourEchoServer(t, ctx, nil)
			} else {
				addr = quicgoEchoServer(t, ctx)
			}
			c, err := DialAddr(ctx, addr, clientTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			const n = 1000
			var wg sync.WaitGroup
			errc := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, err := c.OpenStreamSync(ctx)
					if err != nil {
						errc <- err
						return
					}
					msg := fmt.Appendf(nil, "stream message %015d", i)[:32]
					if _, err := s.Write(msg); err != nil {
						errc <- err
						return
					}
					_ = s.Close()
					got, err := io.ReadAll(s)
					if err != nil {
						errc <- err
						return
					}
					if !bytes.Equal(got, msg) {
						errc <- fmt.Errorf("stream %d: got %q", s.StreamID(), got)
					}
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
		})
	}
}

func TestResumption(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serveStreams(ctx, ln.Accept, func(s *Stream) { echo(s) })
	ctls := clientTLS(t)
	ctls.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i := range 2 {
		c, err := DialAddr(ctx, ln.Addr().String(), ctls, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The ticket arrives after the handshake: one round trip on a stream.
		s, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		echoCheck(t, s, []byte("ticket please"))
		resumed := c.ConnectionState().TLS.DidResume
		_ = c.CloseWithError(0, "")
		if resumed != (i == 1) {
			t.Fatalf("connection %d: DidResume = %v", i, resumed)
		}
	}
}
