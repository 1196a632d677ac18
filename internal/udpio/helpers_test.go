package udpio

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
)

// hangGuard bounds every blocking read in the tests: a lost datagram fails the test
// instead of hanging it. It is not a timing assertion.
const hangGuard = 10 * time.Second

func listenUDP(t testing.TB, network, addr string) *net.UDPConn {
	t.Helper()
	ua, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP(network, ua)
	if err != nil {
		t.Skipf("cannot listen on %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func addrPort(c *net.UDPConn) netip.AddrPort {
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// writerReader returns a Writer on sc with wcfg and a Reader on rc of the given batch.
func writerReader(t testing.TB, sc *net.UDPConn, wcfg WriterConfig, rc *net.UDPConn, batch int) (*Writer, *Reader) {
	t.Helper()
	w, err := NewWriter(sc, wcfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(rc, batch)
	if err != nil {
		t.Fatal(err)
	}
	return w, r
}

// payload returns datagram number i of the given size with recognisable content.
func payload(i, size int) []byte {
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(i*31 + j*7 + 1)
	}
	if size >= 2 {
		b[0], b[1] = byte(i>>8), byte(i)
	}
	return b
}

// received is one datagram as seen by a receiver, copied out of the read buffers.
type received struct {
	data      []byte
	from      netip.AddrPort
	local     netip.Addr
	segmented bool // came in a GRO buffer holding more than one datagram
	ecn       protocol.ECN
}

// readDatagrams reads with r until want datagrams arrived (GRO buffers are split).
func readDatagrams(t testing.TB, c *net.UDPConn, r *Reader, want, bufSize int) []received {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	defer c.SetReadDeadline(time.Time{})
	msgs := make([]Message, 16)
	for i := range msgs {
		msgs[i].Buf = make([]byte, bufSize)
	}
	var out []received
	var parts [][]byte
	for len(out) < want {
		n, err := r.ReadBatch(msgs)
		if err != nil {
			t.Fatalf("ReadBatch after %d of %d datagrams: %v", len(out), want, err)
		}
		for _, m := range msgs[:n] {
			if m.Truncated {
				t.Fatalf("datagram truncated (N=%d, buffer %d)", m.N, len(m.Buf))
			}
			parts = m.Datagrams(parts[:0])
			for _, p := range parts {
				out = append(out, received{bytes.Clone(p), m.Addr, m.Local, len(parts) > 1, m.ECN})
			}
		}
	}
	if len(out) != want {
		t.Fatalf("got %d datagrams, want %d", len(out), want)
	}
	return out
}

func checkDatagrams(t testing.TB, got []received, want [][]byte, from netip.AddrPort) {
	t.Helper()
	for i := range want {
		if !bytes.Equal(got[i].data, want[i]) {
			t.Fatalf("datagram %d: got %d bytes %x..., want %d bytes %x...", i,
				len(got[i].data), head(got[i].data), len(want[i]), head(want[i]))
		}
		if got[i].from != from {
			t.Fatalf("datagram %d: source %v, want %v", i, got[i].from, from)
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 8)] }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
