package quic

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// sinkPacketConn is a socket that receives nothing and counts what is
// written to it, so a listener's stateless answers are counted without
// the kernel.
type sinkPacketConn struct {
	closed  chan struct{}
	once    atomic.Bool
	written atomic.Int64
}

func newSinkPacketConn() *sinkPacketConn { return &sinkPacketConn{closed: make(chan struct{})} }

func (c *sinkPacketConn) ReadFrom([]byte) (int, net.Addr, error) {
	<-c.closed
	return 0, nil, net.ErrClosed
}

func (c *sinkPacketConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.written.Add(1)
	return len(b), nil
}

func (c *sinkPacketConn) Close() error {
	if c.once.CompareAndSwap(false, true) {
		close(c.closed)
	}
	return nil
}

func (c *sinkPacketConn) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443}
}
func (c *sinkPacketConn) SetDeadline(time.Time) error      { return nil }
func (c *sinkPacketConn) SetWriteDeadline(time.Time) error { return nil }

// SetReadDeadline ends the reader: the Transport's Close sets one to stop
// its read loop.
func (c *sinkPacketConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() {
		_ = c.Close()
	}
	return nil
}

// TestUnknownInitialNoAllocs: the listener answers a long-header datagram
// of an unknown connection without allocating, for the answers a flood
// gets: a Retry, the close of an attempt refused before (kept, not sealed
// again), and Version Negotiation. A fresh refusal seals with keys
// derived from its DCID, which allocates in crypto/aes and crypto/cipher
// only. The parsed header used to escape to the heap through the
// address-validation hook, a func value: one allocation per datagram,
// four with a Retry.
func TestUnknownInitialNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector inflates allocation counts")
	}
	remote := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000}
	dcid, scid := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9}
	clientInitial := buildClientInitial(t, dcid, scid, nil, minInitialSize)
	// handleUnknownLongHeader reads the datagram in place (no trial
	// decryption on these paths), so one copy serves every run; a nil
	// buf keeps it out of the buffer pool.
	answer := func(s *baseServer, pkt []byte) { s.handleUnknownLongHeader(receivedPacket{data: pkt, remote: remote}) }
	listen := func(t *testing.T, conf *Config, av *AddressValidationConfig) (*Transport, *sinkPacketConn, *baseServer) {
		c := newSinkPacketConn()
		tr := &Transport{Conn: c, AddressValidation: av}
		t.Cleanup(func() { tr.Close() })
		ln, err := tr.Listen(serverTLS(t), conf)
		if err != nil {
			t.Fatal(err)
		}
		return tr, c, ln.s
	}
	// allocs checks that pkt gets one answer per run and returns the
	// allocations per run.
	allocs := func(t *testing.T, c *sinkPacketConn, s *baseServer, pkt []byte) float64 {
		t.Helper()
		w0 := c.written.Load()
		n := testing.AllocsPerRun(100, func() { answer(s, pkt) })
		if w := c.written.Load() - w0; w != 101 { // AllocsPerRun runs once more to warm up
			t.Fatalf("%d answers to 101 datagrams", w)
		}
		return n
	}

	t.Run("Retry", func(t *testing.T) {
		tr, c, s := listen(t, nil, &AddressValidationConfig{Policy: AlwaysRetry()})
		if n := allocs(t, c, s, clientInitial); n != 0 {
			t.Errorf("%v allocations per Retry", n)
		}
		if r := tr.AddressValidationStats().RetriesSent; r != 101 {
			t.Errorf("%d Retries sent, want 101", r)
		}
	})
	t.Run("refused again", func(t *testing.T) {
		tr, c, s := listen(t, &Config{MaxConnections: 1}, nil)
		s.mu.Lock()
		s.load.conns = 1 // the cap is taken: every Initial is refused
		s.mu.Unlock()
		answer(s, clientInitial) // seals the attempt's close
		if n := allocs(t, c, s, clientInitial); n != 0 {
			t.Errorf("%v allocations per repeated refusal", n)
		}
		if sealed, resent := s.refusals.counts(); sealed != 1 || resent != 101 {
			t.Errorf("sealed %d closes, resent %d; want 1 and 101", sealed, resent)
		}
		if r := tr.Stats().Refused[RefusedConnectionCap.String()]; r != 102 {
			t.Errorf("%d refusals counted, want 102", r)
		}
	})
	t.Run("refused fresh", func(t *testing.T) {
		_, c, s := listen(t, &Config{MaxConnections: 1}, nil)
		s.mu.Lock()
		s.load.conns = 1
		s.mu.Unlock()
		// Each run a new attempt, so a close sealed under new keys.
		pkts := make([][]byte, 101)
		for i := range pkts {
			pkts[i] = buildClientInitial(t, []byte{1, 2, 3, 4, 5, 6, byte(i >> 8), byte(i)}, scid, nil, minInitialSize)
		}
		next := 0
		w0 := c.written.Load()
		n := testing.AllocsPerRun(100, func() { answer(s, pkts[next]); next++ })
		if w := c.written.Load() - w0; w != 101 {
			t.Fatalf("%d answers to 101 datagrams", w)
		}
		// The Sealer, two AES blocks (packet and header protection) and
		// the GCM state: all in NewInitialSealer.
		if n > 4 {
			t.Errorf("%v allocations per fresh refusal, want at most the Initial keys' 4", n)
		}
	})
	t.Run("Version Negotiation", func(t *testing.T) {
		_, c, s := listen(t, nil, nil)
		if n := allocs(t, c, s, rawLongHeader(0x1a2a3a4a, dcid, scid, minInitialSize)); n != 0 {
			t.Errorf("%v allocations per Version Negotiation", n)
		}
	})
}

// TestUnknownDatagramNoAllocsOnUDPConn: on a real socket, whose batched
// reads give the sender as a netip.AddrPort, the stateless answers do not
// allocate a net.UDPAddr either (they did, twice per datagram, before any
// of them was sent): a Retry, Version Negotiation and a stateless reset,
// each checked to reach the client's socket as what it should be.
func TestUnknownDatagramNoAllocsOnUDPConn(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector inflates allocation counts")
	}
	tr, client, cases := unknownDatagramServer(t)
	buf := make([]byte, 2048)
	for _, c := range cases {
		// Answers left from the case before are read and dropped first.
		for {
			_ = client.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, _, err := client.ReadFromUDPAddrPort(buf); err != nil {
				break
			}
		}
		c.answer(tr)
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := client.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("%s: no answer reached the client: %v", c.name, err)
		}
		if !c.isAnswer(buf[:n]) {
			t.Fatalf("%s: the client got % x...", c.name, buf[:min(n, 8)])
		}
		if n := testing.AllocsPerRun(50, func() { c.answer(tr) }); n != 0 {
			t.Errorf("%s: %v allocations per datagram", c.name, n)
		}
	}
}
