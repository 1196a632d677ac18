package quic

import (
	"net"
	"testing"
	"time"
)

// TestListenAnswersInitialQueuedBeforeIt: a client's Initial that reached
// the socket before ListenEarly was called (a test or a server that starts
// serving right after binding) is answered. The Transport's read loop
// starts with the listener; an Initial it read before the listener was
// registered used to be dropped as one for an unknown connection, and the
// client waited for its PTO (about 1 s): quic-go's HTTP datagram tests,
// which dial with a 1 s timeout, failed about once in 100 runs.
func TestListenAnswersInitialQueuedBeforeIt(t *testing.T) {
	for i := range 100 {
		srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		// On loopback the datagram is in the server socket's queue when
		// WriteTo returns.
		if _, err := cl.WriteTo(completeInitial(t, []byte{1, 2, 3, 4, 5, 6, 7, byte(i)}, []byte{9, 9, 9, 9}), srv.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		ln, err := ListenEarly(srv, serverTLS(t), &Config{})
		if err != nil {
			t.Fatal(err)
		}
		// Generous: the answer is immediate; its absence is the failure.
		_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 2048)
		_, _, err = cl.ReadFrom(buf)
		st := ln.s.t.Stats()
		ln.Close()
		srv.Close()
		cl.Close()
		if err != nil {
			t.Fatalf("run %d: no answer to the queued Initial (%v); dropped: %v", i, err, st.DatagramsDropped)
		}
	}
}
