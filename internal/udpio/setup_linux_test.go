package udpio

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

func sockoptInt(t testing.TB, c *net.UDPConn, level, opt int) int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatalf("getsockopt(%d, %d): %v", level, opt, gerr)
	}
	return v
}

func TestSetupReportsWhatTheSocketHas(t *testing.T) {
	for _, tc := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}, {"udp", ":0"}} {
		t.Run(tc.network, func(t *testing.T) {
			c := listenUDP(t, tc.network, tc.addr)
			caps := setupConn(t, c, Config{RecvBuffer: 4 << 20, SendBuffer: 4 << 20})
			t.Logf("%+v", caps)
			if got := sockoptInt(t, c, unix.SOL_SOCKET, unix.SO_RCVBUF); got != caps.RecvBuffer {
				t.Errorf("RecvBuffer %d, socket has %d", caps.RecvBuffer, got)
			}
			if caps.BuffersForced && caps.RecvBuffer < 4<<20 {
				t.Errorf("forced receive buffer only %d bytes", caps.RecvBuffer)
			}
			if caps.GRO != (sockoptInt(t, c, unix.IPPROTO_UDP, unix.UDP_GRO) == 1) {
				t.Errorf("GRO reported %v, socket disagrees", caps.GRO)
			}
			if caps.IPv6 != (tc.network != "udp4") || caps.DualStack != (tc.network == "udp") {
				t.Errorf("family: ipv6=%v dual=%v", caps.IPv6, caps.DualStack)
			}
			if caps.DontFragment {
				if caps.IPv6 {
					if v := sockoptInt(t, c, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER); v != unix.IPV6_PMTUDISC_PROBE {
						t.Errorf("IPV6_MTU_DISCOVER = %d", v)
					}
				} else if v := sockoptInt(t, c, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER); v != unix.IP_PMTUDISC_PROBE {
					t.Errorf("IP_MTU_DISCOVER = %d", v)
				}
			}
			if caps.PacketInfo && !caps.IPv6 && sockoptInt(t, c, unix.IPPROTO_IP, unix.IP_PKTINFO) != 1 {
				t.Error("IP_PKTINFO reported but not set")
			}
		})
	}
}

func TestSetupHonoursDisable(t *testing.T) {
	c := listenUDP(t, "udp4", "127.0.0.1:0")
	caps := setupConn(t, c, Config{DisableGRO: true, DisableGSO: true, RecvBuffer: -1, SendBuffer: -1})
	if caps.GRO || caps.GSO {
		t.Fatalf("offloads on despite Disable: %+v", caps)
	}
	if sockoptInt(t, c, unix.IPPROTO_UDP, unix.UDP_GRO) != 0 {
		t.Fatal("UDP_GRO set despite DisableGRO")
	}
}

func TestBadArguments(t *testing.T) {
	if _, err := Setup(nil, Config{}); err == nil {
		t.Error("Setup(nil) succeeded")
	}
	if _, err := NewReader(nil, 0); err == nil {
		t.Error("NewReader(nil) succeeded")
	}
	c := listenUDP(t, "udp4", "127.0.0.1:0")
	for _, b := range []int{-1, MaxBatch + 1} {
		if _, err := NewReader(c, b); err == nil {
			t.Errorf("NewReader batch %d succeeded", b)
		}
		if _, err := NewWriter(c, WriterConfig{Batch: b}); err == nil {
			t.Errorf("NewWriter batch %d succeeded", b)
		}
	}
}
