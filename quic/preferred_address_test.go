package quic

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	quicgo "github.com/quic-go/quic-go"
)

// paServer listens on the unspecified address of network ("udp4", or
// "udp" for a dual-stack [::] socket) with a preferred address built
// by pa from the port, echoing every stream. It returns the listener, the
// port and the connections it accepts.
func paServer(t *testing.T, ctx context.Context, network string, pa func(port uint16) *PreferredAddress, av *AddressValidationConfig) (*Transport, uint16, <-chan *Conn) {
	t.Helper()
	udp, err := net.ListenUDP(network, nil)
	if err != nil {
		t.Skipf("no %s socket: %v", network, err)
	}
	t.Cleanup(func() { udp.Close() })
	port := uint16(udp.LocalAddr().(*net.UDPAddr).Port)
	tr := &Transport{Conn: udp, AddressValidation: av}
	t.Cleanup(func() { tr.Close() })
	return tr, port, vnEchoServer(t, ctx, tr, &Config{PreferredAddress: pa(port)})
}

func loopback(s string, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(s), port)
}

func acceptOne(t *testing.T, ctx context.Context, conns <-chan *Conn) *Conn {
	t.Helper()
	select {
	case c := <-conns:
		return c
	case <-ctx.Done():
		t.Fatal("no server connection")
	}
	return nil
}

// TestPreferredAddressMigration: our client moves to our server's
// preferred address once the handshake is confirmed, with the preferred
// address's connection ID (sequence 1), and the transfer goes on there.
// The server challenged the new address in its answer to the client's
// probe, so it follows the client without validating again. Over IPv4
// (127.0.0.2 is a loopback address too) and from IPv4 to IPv6.
func TestPreferredAddressMigration(t *testing.T) {
	for _, tc := range []struct {
		name, network string
		pa            func(port uint16) *PreferredAddress
		want          string
	}{
		{"ipv4", "udp4", func(port uint16) *PreferredAddress {
			return &PreferredAddress{IPv4: loopback("127.0.0.2", port)}
		}, "127.0.0.2"},
		// The IPv4 address is the one the client uses already: it moves
		// to the other family.
		{"ipv4 to ipv6", "udp", func(port uint16) *PreferredAddress {
			return &PreferredAddress{IPv4: loopback("127.0.0.1", port), IPv6: loopback("::1", port)}
		}, "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srv, port, conns := paServer(t, ctx, tc.network, tc.pa, &AddressValidationConfig{Policy: NeverRetry()})
			c := dialOurs(t, ctx, net.UDPAddrFromAddrPort(loopback("127.0.0.1", port)), &Config{MigrateToPreferredAddress: true})
			s, err := c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			echoCheck(t, s, testData(100_000, 5))
			waitFor(t, "the move to the preferred address", func() bool {
				ra := c.RemoteAddr().(*net.UDPAddr)
				return ra.IP.String() == tc.want
			})
			c.mu.Lock()
			seq := c.cids.remote.CurrentSequence()
			c.mu.Unlock()
			if seq != 1 {
				t.Errorf("client sends with the server's connection ID %d, want the preferred address's (1)", seq)
			}
			// The transfer goes on over the new path, which the server
			// follows.
			s, err = c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			echoCheck(t, s, testData(200_000, 6))
			sc := acceptOne(t, ctx, conns)
			waitFor(t, "the server following the client", func() bool {
				return srv.AddressValidationStats().PathMigrations == 1
			})
			sc.mu.Lock()
			challenges := sc.path.migration.nOpen
			sc.mu.Unlock()
			if challenges != 0 {
				t.Errorf("the server sent %d PATH_CHALLENGEs to validate an address its probe challenge proved already", challenges)
			}
			if st := srv.AddressValidationStats(); st.PathValidationFailures != 0 {
				t.Errorf("path validation failures: %d", st.PathValidationFailures)
			}
		})
	}
}

// TestPreferredAddressQuicGoClient: quic-go's client does not migrate, but
// it takes the preferred address's connection ID (quic-go stores it as
// sequence 1) and the connection works.
func TestPreferredAddressQuicGoClient(t *testing.T) {
	ctx := testCtx(t)
	_, port, _ := paServer(t, ctx, "udp4", func(port uint16) *PreferredAddress {
		return &PreferredAddress{IPv4: loopback("127.0.0.2", port)}
	}, nil)
	qc, err := quicgo.DialAddr(ctx, loopback("127.0.0.1", port).String(), clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	echoOver(t, ctx, qc, 3)
}

// firstPeerOnly is a server socket that hears only the first address that
// sends to it: the path to anywhere else is broken.
type firstPeerOnly struct {
	net.PacketConn
	first  netip.AddrPort
	probes atomic.Int64 // datagrams dropped from other addresses
}

func (f *firstPeerOnly) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := f.PacketConn.ReadFrom(b)
		if err != nil {
			return n, addr, err
		}
		ap := addr.(*net.UDPAddr).AddrPort()
		if !f.first.IsValid() {
			f.first = ap
		}
		if ap == f.first {
			return n, addr, nil
		}
		f.probes.Add(1)
	}
}

// TestPreferredAddressUnreachable: when the path to the preferred address
// cannot be validated (three PTOs without an answer), the client gives up
// and the connection goes on where it was.
func TestPreferredAddressUnreachable(t *testing.T) {
	ctx := testCtx(t)
	udp, err := net.ListenUDP("udp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	port := uint16(udp.LocalAddr().(*net.UDPAddr).Port)
	sock := &firstPeerOnly{PacketConn: udp}
	tr := &Transport{Conn: sock}
	defer tr.Close()
	vnEchoServer(t, ctx, tr, &Config{PreferredAddress: &PreferredAddress{IPv4: loopback("127.0.0.2", port)}})
	server := net.UDPAddrFromAddrPort(loopback("127.0.0.1", port))
	c := dialOurs(t, ctx, server, &Config{MigrateToPreferredAddress: true})
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("before"))
	waitFor(t, "the client giving up on the preferred address", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return sock.probes.Load() > 0 && c.x.pa.started && len(c.path.extra) == 0
	})
	if got := c.RemoteAddr().String(); got != server.String() {
		t.Errorf("remote address %s after the failed move, want %s", got, server)
	}
	s, err = c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("after"))
}

func TestPreferredAddressConfig(t *testing.T) {
	for _, pa := range []*PreferredAddress{
		{},
		{IPv4: loopback("::1", 443)},
		{IPv6: loopback("127.0.0.1", 443)},
		{IPv4: netip.AddrPortFrom(netip.IPv4Unspecified(), 443)},
	} {
		if _, err := populateConfig(&Config{PreferredAddress: pa}); err == nil {
			t.Errorf("PreferredAddress %+v accepted", pa)
		}
	}
	// A socket that would not receive what clients send to the address.
	for _, tc := range []struct {
		network, addr string
		pa            func(port uint16) *PreferredAddress
		want          string
	}{
		{"udp4", "127.0.0.1:0", func(p uint16) *PreferredAddress { return &PreferredAddress{IPv4: loopback("127.0.0.1", p+1)} }, "port"},
		{"udp4", "0.0.0.0:0", func(p uint16) *PreferredAddress { return &PreferredAddress{IPv6: loopback("::1", p)} }, "IPv4 only"},
		{"udp4", "127.0.0.1:0", func(p uint16) *PreferredAddress { return &PreferredAddress{IPv4: loopback("127.0.0.2", p)} }, "bound to"},
	} {
		ua, _ := net.ResolveUDPAddr(tc.network, tc.addr)
		udp, err := net.ListenUDP(tc.network, ua)
		if err != nil {
			t.Fatal(err)
		}
		port := uint16(udp.LocalAddr().(*net.UDPAddr).Port)
		_, err = Listen(udp, serverTLS(t), &Config{PreferredAddress: tc.pa(port)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Listen on %s with %+v: %v, want an error about %q", udp.LocalAddr(), tc.pa(port), err, tc.want)
		}
		udp.Close()
	}
}
