package udpio

import (
	"net/netip"
	"testing"
)

func TestSockaddrRoundTrip(t *testing.T) {
	b := make([]byte, sockaddrSize)
	for _, tc := range []struct {
		in   string
		v6   bool
		want string
	}{
		{"127.0.0.1:443", false, "127.0.0.1:443"},
		{"[::ffff:10.1.2.3]:1", false, "10.1.2.3:1"},
		{"192.0.2.7:65535", true, "192.0.2.7:65535"},
		{"[2001:db8::1]:4433", true, "[2001:db8::1]:4433"},
		{"[fe80::1%5]:9", true, "[fe80::1%5]:9"},
	} {
		n, err := encodeSockaddr(b, netip.MustParseAddrPort(tc.in), tc.v6)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		got, ok := decodeSockaddr(b[:n])
		if !ok || got.String() != tc.want {
			t.Fatalf("%s: decoded %v (%v), want %s", tc.in, got, ok, tc.want)
		}
	}
	if _, err := encodeSockaddr(b, netip.MustParseAddrPort("[::1]:1"), false); !errorsIs(err, ErrAddrFamily) {
		t.Fatalf("IPv6 on IPv4 socket: %v", err)
	}
	if _, err := encodeSockaddr(b, netip.AddrPort{}, true); !errorsIs(err, ErrInvalidAddr) {
		t.Fatalf("zero address: %v", err)
	}
	for _, bad := range [][]byte{nil, {2}, {2, 0, 0, 1}, {10, 0, 1, 2, 3}, {99, 0, 0, 0, 0, 0, 0, 0}} {
		if ap, ok := decodeSockaddr(bad); ok {
			t.Fatalf("decoded %x as %v", bad, ap)
		}
	}
}

func FuzzDecodeSockaddr(f *testing.F) {
	b := make([]byte, sockaddrSize)
	n, _ := encodeSockaddr(b, netip.MustParseAddrPort("127.0.0.1:4433"), false)
	f.Add(append([]byte(nil), b[:n]...))
	n, _ = encodeSockaddr(b, netip.MustParseAddrPort("[2001:db8::1]:443"), true)
	f.Add(append([]byte(nil), b[:n]...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ap, ok := decodeSockaddr(b)
		if !ok {
			return
		}
		if !ap.Addr().IsValid() || ap.Addr().Is4In6() {
			t.Fatalf("decoded %v", ap)
		}
		// Whatever decodes must encode and decode to the same thing.
		out := make([]byte, sockaddrSize)
		m, err := encodeSockaddr(out, ap, true)
		if err != nil {
			t.Fatal(err)
		}
		if again, ok := decodeSockaddr(out[:m]); !ok || again != ap {
			t.Fatalf("%v re-decoded as %v", ap, again)
		}
	})
}
