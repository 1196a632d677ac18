package agent

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

func TestVersionNegotiation(t *testing.T) {
	env := newTestEnv(t, nil)
	dcid := bytes.Repeat([]byte{0xdd}, 40) // other versions may use long CIDs
	scid := []byte{0x5c}
	pkt := unknownVersionPacket(0x1a2a3a4a, dcid, scid, 1200)
	reply := mustProcess(t, env.w, pkt, clientAddr, ReasonVersionNegotiation)
	gotD, gotS, vs, err := wire.ParseVersionNegotiation(reply, nil)
	if err != nil {
		t.Fatal(err)
	}
	// RFC 9000 17.2.1: the CIDs are swapped.
	if !bytes.Equal(gotD, scid) || !bytes.Equal(gotS, dcid) {
		t.Fatalf("VN CIDs %x / %x", gotD, gotS)
	}
	if len(vs) != 3 || !slices.Contains(vs, wire.Version1) || !slices.Contains(vs, wire.Version2) || !vs[2].IsReserved() {
		t.Fatalf("VN versions %v: want v1, v2 and a GREASE version", vs)
	}
	if slices.Contains(vs, wire.Version(0x1a2a3a4a)) {
		t.Fatal("VN lists the client's version")
	}
	if env.cache.len() != 0 {
		t.Fatal("VN admitted a CID")
	}
	// Longest reply fits MaxReplyLen.
	big := unknownVersionPacket(0xff00001d, bytes.Repeat([]byte{1}, 255), bytes.Repeat([]byte{2}, 255), 1200)
	if reply := mustProcess(t, env.w, big, clientAddr, ReasonVersionNegotiation); len(reply) != MaxReplyLen {
		t.Fatalf("VN for 255-byte CIDs is %d bytes, MaxReplyLen %d", len(reply), MaxReplyLen)
	}
}

func TestDrops(t *testing.T) {
	env := newTestEnv(t, nil)
	initial := clientInitial(t, wire.Version1, odcid, cscid, nil, 1200)
	fixedBitZero := bytes.Clone(initial)
	fixedBitZero[0] &^= 0x40
	short := append([]byte{0x40}, bytes.Repeat([]byte{0xab}, 60)...)
	cases := []struct {
		name string
		pkt  []byte
		want Reason
	}{
		{"empty", nil, ReasonMalformed},
		{"one byte", []byte{0xc0}, ReasonMalformed},
		{"truncated Initial", initial[:30], ReasonMalformed},
		{"Initial cut in the payload", initial[:len(initial)-1], ReasonMalformed},
		{"fixed bit zero", fixedBitZero, ReasonMalformed},
		{"small Initial", clientInitial(t, wire.Version1, odcid, cscid, nil, 1199), ReasonInitialTooSmall},
		{"small v2 Initial", clientInitial(t, wire.Version2, odcid, cscid, nil, 1000), ReasonInitialTooSmall},
		{"short DCID", clientInitial(t, wire.Version1, odcid[:7], cscid, nil, 1200), ReasonDCIDTooShort},
		{"DCID of 21 bytes", unknownVersionPacket(1, make([]byte, 21), cscid, 1200), ReasonCIDTooLong},
		{"SCID of 21 bytes", unknownVersionPacket(uint32(wire.Version2), odcid, make([]byte, 21), 1200), ReasonCIDTooLong},
		{"version 0", unknownVersionPacket(0, odcid, cscid, 1200), ReasonVersionNegotiationIn},
		{"unknown version, small", unknownVersionPacket(0x1a2a3a4a, odcid, cscid, 1199), ReasonUnsupportedTooSmall},
		{"short header", short, ReasonUnknownConnection},
		{"0-RTT", longPacket(t, wire.PacketType0RTT, wire.Version1, odcid, cscid, 1200), ReasonUnknownConnection},
		{"Handshake", longPacket(t, wire.PacketTypeHandshake, wire.Version2, odcid, cscid, 1200), ReasonUnknownConnection},
		{"Retry", wire.AppendRetry(nil, wire.Version1, odcid, cscid, make([]byte, 40)), ReasonUnexpectedRetry},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustProcess(t, env.w, tc.pkt, clientAddr, tc.want)
		})
	}
	if env.cache.len() != 0 {
		t.Fatal("a dropped packet admitted a CID")
	}
}

// TestInvalidSource: a datapath bug (no source address) cannot be
// answered or admitted, and does not panic.
func TestInvalidSource(t *testing.T) {
	env := newTestEnv(t, nil)
	mustProcess(t, env.w, clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), netip.AddrPort{}, ReasonInternal)
	tok, rscid := agentRetryToken(t, env)
	mustProcess(t, env.w, clientInitial(t, wire.Version1, rscid, cscid, tok, 1200), netip.AddrPort{}, ReasonOfToken(token.ReasonAddrMismatch))
}

// TestIPv4MappedSource: a dual-stack socket reports IPv4 clients as
// IPv4-mapped IPv6; the token treats both forms as one address.
func TestIPv4MappedSource(t *testing.T) {
	env := newTestEnv(t, nil)
	tok, rscid := agentRetryToken(t, env)
	mapped := netip.AddrPortFrom(netip.AddrFrom16(clientAddr.Addr().As16()), clientAddr.Port())
	mustProcess(t, env.w, clientInitial(t, wire.Version1, rscid, cscid, tok, 1200), mapped, ReasonRetryTokenForwarded)
}

// TestProcessKeepsPacket: the datapath forwards the datagram as it came.
func TestProcessKeepsPacket(t *testing.T) {
	env := newTestEnv(t, nil)
	tok, rscid := agentRetryToken(t, env)
	for _, pkt := range [][]byte{
		clientInitial(t, wire.Version1, odcid, cscid, nil, 1200),
		clientInitial(t, wire.Version1, rscid, cscid, tok, 1200),
		unknownVersionPacket(0x1a2a3a4a, odcid, cscid, 1200),
	} {
		orig := bytes.Clone(pkt)
		env.w.Process(pkt, clientAddr, make([]byte, 0, MaxReplyLen))
		if !bytes.Equal(pkt, orig) {
			t.Fatal("Process modified the packet")
		}
	}
}

func TestObserveEgress(t *testing.T) {
	env := newTestEnv(t, nil)
	hostSCID := []byte{0xa0, 1, 2, 3, 4, 5, 6, 7}
	for _, typ := range []wire.PacketType{wire.PacketTypeInitial, wire.PacketTypeHandshake} {
		for _, v := range []wire.Version{wire.Version1, wire.Version2} {
			hostSCID[0]++
			if !env.w.ObserveEgress(longPacket(t, typ, v, cscid, hostSCID, 300)) {
				t.Fatalf("%v %v not learned", v, typ)
			}
			if !env.cache.Contains(hostSCID) {
				t.Fatalf("%v %v: SCID %x not admitted", v, typ, hostSCID)
			}
		}
	}
	ignored := [][]byte{
		nil,
		append([]byte{0x40}, cscid...), // short header
		longPacket(t, wire.PacketType0RTT, wire.Version1, cscid, []byte{9, 9}, 100),
		wire.AppendRetry(nil, wire.Version1, cscid, []byte{8, 8}, make([]byte, 40)),
		longPacket(t, wire.PacketTypeInitial, wire.Version1, cscid, nil, 100), // empty SCID
		{0xc0, 0, 0, 0, 1, 30},
	}
	for i, pkt := range ignored {
		if env.w.ObserveEgress(pkt) {
			t.Fatalf("egress packet %d learned", i)
		}
	}
	if env.cache.len() != 4 {
		t.Fatalf("cache %v", env.cache.m)
	}
	s := env.w.Stats()
	if s.EgressLearned != 4 || s.EgressIgnored != uint64(len(ignored)) {
		t.Fatalf("egress stats %+v", s)
	}
}
