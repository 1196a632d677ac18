package quic

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
)

// TestServerSurvivesGarbage sends the server random datagrams, including
// well-formed Initial headers with garbage payloads, then checks that a
// real client still gets served.
func TestServerSurvivesGarbage(t *testing.T) {
	ctx := testCtx(t)
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn := listenUDP(t)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 200 {
		size := 1 + r.IntN(1400)
		if i%2 == 0 {
			size = 1200 + r.IntN(200)
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		switch i % 4 {
		case 0: // Initial header, v1, 8-byte DCID, garbage after
			if size > 20 {
				b[0] = 0xc0 | b[0]&0x0f
				binary.BigEndian.PutUint32(b[1:], 1)
				b[5] = 8
			}
		case 1: // short header
			b[0] = 0x40 | b[0]&0x3f
		}
		if _, err := conn.WriteTo(b, raddr); err != nil {
			t.Fatal(err)
		}
	}
	c, err := DialAddr(ctx, addr, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	if _, err := ln.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	// The socket delivers in order: the garbage was handled before our
	// client's Initial. None of it may have created a connection.
	ln.s.mu.Lock()
	load := ln.s.load
	ln.s.mu.Unlock()
	if load.conns != 1 || load.handshaking != 0 {
		t.Fatalf("%d connections, %d in the handshake after garbage and one client", load.conns, load.handshaking)
	}
	// Every datagram dropped is counted with its reason.
	st := ln.s.t.Stats()
	var dropped uint64
	for _, n := range st.DatagramsDropped {
		dropped += n
	}
	for _, r := range []DropReason{DropMalformed, DropUnknownConnection} {
		if st.DatagramsDropped[r.String()] == 0 {
			t.Errorf("no %s drop counted: %+v", r, st)
		}
	}
	if dropped > 200 {
		t.Errorf("%d drops counted for 200 garbage datagrams: %+v", dropped, st)
	}
}
