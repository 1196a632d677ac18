package http3

import (
	"net/http"
	"testing"
)

// TestAbandonedResponsesKeepConnectionCredit is the "not reading the
// response" case of quic-go's TestHTTPMultipleRequests: responses larger
// than the stream window, each closed unread, one after the other on one
// connection. Closing sends STOP_SENDING; the data the server sent before
// its RESET_STREAM counts against the connection's flow control, so our
// QUIC layer must keep the stream until that final size is known and
// give the credit back. It used to forget the stream when the
// STOP_SENDING was acknowledged: against quic-go's server the connection
// window ran dry after eight requests and the ninth hung until the idle
// timeout.
func TestAbandonedResponsesKeepConnectionCredit(t *testing.T) {
	checkGoroutines(t)
	data := make([]byte, 500<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	for _, p := range peerPairs {
		t.Run(p.name, func(t *testing.T) {
			addr, clientTLS := p.server(t, h)
			c := p.client(t, clientTLS)
			for i := range 40 {
				rsp, err := c.Get("https://" + addr + "/")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				rsp.Body.Close()
			}
		})
	}
}
