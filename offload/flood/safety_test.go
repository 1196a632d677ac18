package flood

import (
	"errors"
	"net/netip"
	"testing"
)

func TestIsPrivateNetns(t *testing.T) {
	for _, c := range []struct {
		self, pid1 uint64
		pid1OK     bool
		want       bool
	}{
		{initNetNSInode, 0, false, false},             // the initial namespace, PID 1 hidden
		{initNetNSInode, initNetNSInode, true, false}, // the initial namespace
		{4026532000, 4026532000, true, false},         // a container's own namespace (PID 1's)
		{4026532001, 4026532000, true, true},          // a namespace made inside it
		{4026532001, 0, false, true},                  // PID 1 hidden, not the initial one
		{0, 0, false, false},                          // unknown
	} {
		if got := isPrivateNetns(c.self, c.pid1, c.pid1OK); got != c.want {
			t.Errorf("self %d pid1 %d (%v): %v, want %v", c.self, c.pid1, c.pid1OK, got, c.want)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1"} {
		if err := CheckTarget(netip.MustParseAddr(a)); err != nil {
			t.Errorf("loopback %s refused: %v", a, err)
		}
	}
	if err := CheckTarget(netip.Addr{}); err == nil {
		t.Error("invalid address accepted")
	}
	if private, _ := InPrivateNetns(); private {
		t.Skip("skipping the refusal checks: this test already runs in a private network namespace")
	}
	for _, a := range []string{"10.0.0.1", "192.0.2.1", "2001:db8::1", "0.0.0.0"} {
		if err := CheckTarget(netip.MustParseAddr(a)); !errors.Is(err, ErrUnsafeTarget) {
			t.Errorf("%s outside a namespace: %v, want ErrUnsafeTarget", a, err)
		}
	}
}

// TestSendersRefuseOutsideNamespace proves that no socket is even opened
// for a forbidden target.
func TestSendersRefuseOutsideNamespace(t *testing.T) {
	if private, _ := InPrivateNetns(); private {
		t.Skip("skipping: this test already runs in a private network namespace")
	}
	if _, err := NewUDPSender(netip.MustParseAddrPort("192.0.2.1:443"), 0); !errors.Is(err, ErrUnsafeTarget) {
		t.Errorf("UDP sender to 192.0.2.1: %v, want ErrUnsafeTarget", err)
	}
	if _, err := NewPacketSender("lo", 0); err == nil {
		t.Error("raw sender opened outside a private namespace")
	}
	if _, err := NewUDPSender(netip.MustParseAddrPort("127.0.0.1:0"), 0); err == nil {
		t.Error("target without a port accepted")
	}
}
