package benchmark

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestBenchNet: a datagram from the client namespace crosses the bridge
// and reaches a socket in the server namespace, from the client's address.
func TestBenchNet(t *testing.T) { checkDatagramCrosses(t, newBenchNet(t)) }

// checkDatagramCrosses sends one datagram from n's client namespace to the
// server address and checks that a socket in the server namespace gets
// it, from the client's address.
func checkDatagramCrosses(t *testing.T, n *benchNet) {
	t.Helper()
	var srv *net.UDPConn
	must(t, n.in(n.server, func() (err error) {
		srv, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ipServer, serverPort)))
		return err
	}))
	defer srv.Close()
	must(t, n.in(n.client, func() error {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ipServer, serverPort)))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("ping"))
		return err
	}))
	must(t, srv.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 16)
	k, from, err := srv.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:k]) != "ping" || from.Addr() != ipClient {
		t.Fatalf("server got %q from %v, %v; want ping from %v", buf[:k], from, err, ipClient)
	}
}

func TestServeVariantRefusesUnknown(t *testing.T) {
	if err := serveVariant("bogus", t.TempDir()); err == nil {
		t.Fatal("serveVariant accepted an unknown variant")
	}
}

func TestMedian(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		in   []time.Duration
		want float64
	}{
		{nil, 0},
		{[]time.Duration{3 * us}, 3},
		{[]time.Duration{9 * us, 1 * us, 5 * us}, 5},
		{[]time.Duration{4 * us, 1 * us, 3 * us, 2 * us}, 3},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
