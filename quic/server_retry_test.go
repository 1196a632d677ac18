package quic

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/wire"
)

// testRetryValidator stands in for token validation: it asks every client
// without a token to Retry, with a "token" that is just the original
// destination connection ID, and accepts the token on the next Initial as
// a host cooperator would (ODCID from the token, RSCID = the Initial's DCID).
func testRetryValidator(retries *atomic.Int32) addressValidator {
	const prefix = "test-token:"
	return func(hdr *wire.LongHeader, _ net.Addr) initialDecision {
		if len(hdr.Token) == 0 {
			retries.Add(1)
			return initialDecision{action: initialRetry, retryToken: append([]byte(prefix), hdr.DestConnID...)}
		}
		if !bytes.HasPrefix(hdr.Token, []byte(prefix)) {
			return initialDecision{action: initialDrop}
		}
		return initialDecision{
			action:    initialAccept,
			validated: true,
			odcid:     hdr.Token[len(prefix):],
			rscid:     hdr.DestConnID,
		}
	}
}

func TestServerRetry(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var retries atomic.Int32
			ln.s.setValidator(testRetryValidator(&retries))
			go func() {
				c, err := ln.Accept(ctx)
				if err != nil {
					return
				}
				s, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				buf := make([]byte, 100)
				n, _ := s.Read(buf)
				_, _ = s.Write(buf[:n])
				_ = s.Close()
			}()
			var s rwStream
			if peer == "ours" {
				c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
			} else {
				// quic-go checks original_destination_connection_id and
				// retry_source_connection_id against the Retry it followed.
				c, err := quicgo.DialAddr(ctx, ln.Addr().String(), clientTLS(t), &quicgo.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
			}
			if retries.Load() == 0 {
				t.Fatal("no Retry was sent")
			}
			echoCheck(t, s, []byte("after retry"))
		})
	}
}
