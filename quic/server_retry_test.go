package quic

import (
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

func TestServerRetry(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			ctx := testCtx(t)
			// Every client without a token is asked to Retry; the token
			// the Retry carries is accepted on its next Initial, which
			// gets the ODCID and RSCID transport parameters from it.
			tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{Policy: AlwaysRetry()}}
			defer tr.Close()
			ln, err := tr.Listen(serverTLS(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
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
			if tr.AddressValidationStats().RetriesSent == 0 {
				t.Fatal("no Retry was sent")
			}
			echoCheck(t, s, []byte("after retry"))
		})
	}
}
