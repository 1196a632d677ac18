package udpio

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"golang.org/x/sys/unix"
)

// rxCmsgs builds a receive-side control buffer the way the kernel lays it out.
func rxCmsgs() []byte {
	b := make([]byte, rxControlSize)
	n := 0
	d, used := putCmsg(b[n:], unix.SOL_UDP, unix.UDP_GRO, 4)
	binary.NativeEndian.PutUint32(d, 1350)
	n += used
	d, used = putCmsg(b[n:], unix.IPPROTO_IP, unix.IP_PKTINFO, unix.SizeofInet4Pktinfo)
	binary.NativeEndian.PutUint32(d, 7)
	copy(d[4:8], []byte{10, 0, 0, 9}) // spec_dst: routing, not the header destination
	copy(d[8:12], []byte{192, 0, 2, 1})
	n += used
	d, used = putCmsg(b[n:], unix.IPPROTO_IP, unix.IP_TOS, 1)
	d[0] = 0xb8 | byte(protocol.ECNCE)
	n += used
	return b[:n]
}

func TestParseControl(t *testing.T) {
	info := parseControl(rxCmsgs())
	want := rxInfo{local: netip.MustParseAddr("192.0.2.1"), ifIndex: 7, segSize: 1350, ecn: protocol.ECNCE}
	if info != want {
		t.Fatalf("got %+v, want %+v", info, want)
	}

	b := make([]byte, 128)
	d, n := putCmsg(b, unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, unix.SizeofInet6Pktinfo)
	a := netip.MustParseAddr("::ffff:127.0.0.1").As16()
	copy(d, a[:])
	binary.NativeEndian.PutUint32(d[16:], 1)
	d, used := putCmsg(b[n:], unix.IPPROTO_IPV6, unix.IPV6_TCLASS, 4)
	binary.NativeEndian.PutUint32(d, uint32(protocol.ECNECT0))
	info = parseControl(b[:n+used])
	if info.local != netip.MustParseAddr("127.0.0.1") || info.ifIndex != 1 || info.ecn != protocol.ECNECT0 {
		t.Fatalf("IPv6 pktinfo: got %+v", info)
	}

	// Malformed input: a length past the buffer, a length below the header, truncation.
	full := rxCmsgs()
	for _, bad := range [][]byte{nil, full[:5], full[:cmsgHdrLen+2]} {
		_ = parseControl(bad)
	}
	corrupt := append([]byte(nil), full...)
	binary.NativeEndian.PutUint64(corrupt, 1<<63)
	if got := parseControl(corrupt); got != (rxInfo{}) {
		t.Fatalf("huge length accepted: %+v", got)
	}
	binary.NativeEndian.PutUint64(corrupt, 3)
	if got := parseControl(corrupt); got != (rxInfo{}) {
		t.Fatalf("short length accepted: %+v", got)
	}
}

// TestBuildTxControl checks the send-side control messages with x/sys/unix's parser.
func TestBuildTxControl(t *testing.T) {
	b := make([]byte, txControlSize)
	for _, tc := range []struct {
		seg   int
		local string
		ifidx int
		v6    bool
		want  []int32 // cmsg types in order
	}{
		{0, "", 0, false, nil},
		{1200, "", 0, false, []int32{unix.UDP_SEGMENT}},
		{1200, "127.0.0.2", 0, false, []int32{unix.UDP_SEGMENT, unix.IP_PKTINFO}},
		{0, "", 3, false, []int32{unix.IP_PKTINFO}},
		{1350, "::1", 0, true, []int32{unix.UDP_SEGMENT, unix.IPV6_PKTINFO}},
		{0, "127.0.0.1", 0, true, []int32{unix.IPV6_PKTINFO}},
	} {
		var local netip.Addr
		if tc.local != "" {
			local = netip.MustParseAddr(tc.local)
		}
		n, err := buildTxControl(b, tc.seg, protocol.ECNNotECT, netip.AddrPort{}, local, tc.ifidx, tc.v6)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := unix.ParseSocketControlMessage(b[:n])
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if len(msgs) != len(tc.want) {
			t.Fatalf("%+v: %d messages", tc, len(msgs))
		}
		for i, m := range msgs {
			if m.Header.Type != tc.want[i] {
				t.Fatalf("%+v: message %d type %d", tc, i, m.Header.Type)
			}
			switch m.Header.Type {
			case unix.UDP_SEGMENT:
				if binary.NativeEndian.Uint16(m.Data) != uint16(tc.seg) {
					t.Fatalf("segment size %d", binary.NativeEndian.Uint16(m.Data))
				}
			case unix.IP_PKTINFO:
				if int(binary.NativeEndian.Uint32(m.Data)) != tc.ifidx {
					t.Fatal("ifindex")
				}
				if local.IsValid() && netip.AddrFrom4([4]byte(m.Data[4:8])) != local {
					t.Fatalf("spec_dst %v", m.Data[4:8])
				}
			case unix.IPV6_PKTINFO:
				if netip.AddrFrom16([16]byte(m.Data[:16])).Unmap() != local.Unmap() {
					t.Fatalf("source %v", m.Data[:16])
				}
			}
		}
	}
	if _, err := buildTxControl(b, 0, protocol.ECNNotECT, netip.AddrPort{}, netip.MustParseAddr("::1"), 0, false); !errorsIs(err, ErrAddrFamily) {
		t.Fatalf("IPv6 source on IPv4 socket: %v", err)
	}
}

func FuzzParseControl(f *testing.F) {
	f.Add(rxCmsgs())
	f.Add([]byte{})
	f.Add(make([]byte, cmsgHdrLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		info := parseControl(b)
		if info.segSize < 0 || info.ecn > 3 {
			t.Fatalf("out of range: %+v", info)
		}
	})
}
