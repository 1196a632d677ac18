package quic

import (
	"net"
	"testing"
	"time"
)

// TestTransportNeverTakesConnLock checks one nesting of the lock order
// (doc.go, "# Locking"): Conn.mu is outermost, so the Transport's side,
// which runs while connections hold their mu and take Transport.mu,
// must never wait for a connection's mu. With the connection's mu held,
// the read path hands it a datagram (by its connection ID) and the
// Transport's reports run; any of them taking Conn.mu would block here.
func TestTransportNeverTakesConnLock(t *testing.T) {
	c := newOfflineConn(t)
	tr := c.t
	dcid := c.cids.src
	if len(dcid) == 0 {
		t.Fatal("the connection has no connection ID of its own")
	}
	// A short header packet for the connection, long enough for its
	// header; it is only queued, never decrypted here.
	datagram := append([]byte{0x40}, dcid...)
	datagram = append(datagram, make([]byte, 40)...)
	// A short header packet for no connection: the Transport drops it.
	unknown := append([]byte{0x40}, make([]byte, len(dcid)+40)...)
	remote := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}

	c.mu.Lock()
	defer c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.handleDatagram(receivedPacket{data: datagram, remote: remote})
		tr.handleDatagram(receivedPacket{data: unknown, remote: remote})
		_ = tr.Stats()
		_ = tr.AddressValidationStats()
		_ = tr.TopRefusedPrefixes()
		tr.ConnectionIDs(func([]byte) bool { return true })
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		// Only a deadlock gets here: the calls above take microseconds.
		t.Fatal("the Transport waits for a connection's mu")
	}
	q := c.inbox.take()
	if len(q) != 1 || string(q[0].data) != string(datagram) {
		t.Fatalf("%d datagrams queued for the connection, want the one sent to its ID", len(q))
	}
}
