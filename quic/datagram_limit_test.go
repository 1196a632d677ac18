package quic

import (
	"bytes"
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/testhook"
)

// TestDatagramFrameSizeLimit: the peer's max_datagram_frame_size bounds
// the whole DATAGRAM frame, type and length included (RFC 9221 section
// 3): with 456 announced (testhook.MaxDatagramFrameSize, what the drop-in
// suite maps quic-go's wire.MaxDatagramSize to), a payload may have 453
// bytes (1 for the type, 2 for the length), and one of that size arrives.
func TestDatagramFrameSizeLimit(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		saved := testhook.MaxDatagramFrameSize
		testhook.MaxDatagramFrameSize = 456
		t.Cleanup(func() { testhook.MaxDatagramFrameSize = saved })
		ctx := s.ctx()
		srv := s.server(nil, &Config{EnableDatagrams: true})
		c := s.dial(simClientAddr(1), srv.addr, &Config{EnableDatagrams: true})
		echoOurs(t, ctx, c, 1000)
		sc := srv.only(t)
		var tooLarge *DatagramTooLargeError
		if err := c.SendDatagram(make([]byte, 600)); !errors.As(err, &tooLarge) {
			t.Fatalf("a 600-byte datagram: %v, want a DatagramTooLargeError", err)
		}
		if got := tooLarge.MaxDatagramPayloadSize; got != 453 {
			t.Fatalf("MaxDatagramPayloadSize %d, want 453", got)
		}
		if err := c.SendDatagram(make([]byte, 454)); !errors.As(err, &tooLarge) {
			t.Fatalf("a 454-byte datagram: %v, want a DatagramTooLargeError", err)
		}
		payload := bytes.Repeat([]byte("b"), 453)
		if err := c.SendDatagram(payload); err != nil {
			t.Fatal(err)
		}
		got, err := sc.ReceiveDatagram(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("received %d bytes, want the 453 sent", len(got))
		}
	})
}
