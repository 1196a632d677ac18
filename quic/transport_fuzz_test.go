package quic

import (
	"context"
	"io"
	"net/netip"
	"testing"
	"time"
)

// FuzzServerTransport feeds arbitrary datagrams, from arbitrary loopback
// client addresses, to a live server Transport through InjectDatagram (the same
// path a socket read takes). Nothing may panic, and afterwards the server
// must still serve a real client: bad input costs nothing but itself.
func FuzzServerTransport(f *testing.F) {
	f.Add(buildClientInitial(f, []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9}, nil, 1200), uint16(40000))
	f.Add(buildClientInitial(f, []byte{1, 2, 3, 4, 5, 6, 7, 8}, nil, []byte("bogus token"), 1200), uint16(40001))
	f.Add([]byte{0x40, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint16(1))
	f.Add([]byte{0xc0, 0, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0}, uint16(2))
	f.Add([]byte{0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 0, 0}, uint16(3))
	f.Add([]byte{}, uint16(4))

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	srv := &Transport{
		Conn:               listenUDP(f),
		ConnectionIDLength: 8,
		AddressValidation:  &AddressValidationConfig{Policy: AutoRetry(4), TokenSecret: testTokenSecret},
	}
	defer srv.Close()
	// The default HandshakeIdleTimeout (5 s), so that the genuine
	// client's handshake survives a stalled machine. What the fuzz inputs
	// leave open does not grow with it: they cannot validate an address
	// (no token, no Handshake keys), so AutoRetry(4) keeps them to five
	// unvalidated handshakes at a time and answers the rest with a
	// stateless Retry; no input waits for one to end.
	ln, err := srv.Listen(serverTLS(f), nil)
	if err != nil {
		f.Fatal(err)
	}
	serveStreams(ctx, ln.Accept, func(s *Stream) {
		buf := make([]byte, 16)
		n, _ := s.Read(buf)
		_, _ = s.Write(buf[:n])
		_ = s.Close()
	})

	// A genuine client, before and after the fuzzing.
	check := func(tb testing.TB) {
		tb.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		c, err := DialAddr(cctx, ln.Addr().String(), clientTLS(tb), nil)
		if err != nil {
			tb.Fatalf("server stopped serving: %v", err)
		}
		defer c.CloseWithError(0, "")
		s, err := c.OpenStreamSync(cctx)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := s.Write([]byte("ping")); err != nil {
			tb.Fatal(err)
		}
		_ = s.Close()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "ping" {
			tb.Fatalf("echo: %q, %v", buf, err)
		}
	}
	check(f)
	defer check(f)

	f.Fuzz(func(t *testing.T, datagram []byte, port uint16) {
		// Replies (Retries, Version Negotiation, handshakes) go to this
		// address: keep it on loopback (127.0.0.0/8), never elsewhere.
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(port >> 8), byte(port)}), port|1)
		if err := srv.InjectDatagram(datagram, from); err != nil && err != ErrDatagramTooLarge {
			t.Fatalf("InjectDatagram: %v", err)
		}
	})
}
