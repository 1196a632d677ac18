package udpio

import (
	"net/netip"
	"testing"
)

// mixedDatagrams returns 64 datagrams in 8 groups of 8; within a group all have the same
// size except, in most groups, a shorter last one, so that a group can go out as one GSO
// buffer. Sizes vary from group to group, down to a 1-byte datagram.
func mixedDatagrams() (dgrams [][]byte, groups [][]int) {
	for g := range 8 {
		size := 100 + g*170
		var idx []int
		for k := range 8 {
			sz := size
			if k == 7 && g%3 != 0 {
				sz = size/2 + 1
			}
			if g == 0 && k == 7 {
				sz = 1
			}
			idx = append(idx, len(dgrams))
			dgrams = append(dgrams, payload(len(dgrams), sz))
		}
		groups = append(groups, idx)
	}
	return dgrams, groups
}

// messagesFor builds the send messages: one per datagram, or one per group with a
// segment size (sent with GSO, or split by the Writer when GSO is off).
func messagesFor(dgrams [][]byte, groups [][]int, grouped bool, to netip.AddrPort) []Message {
	var msgs []Message
	if !grouped {
		for _, d := range dgrams {
			msgs = append(msgs, Message{Buf: d, Addr: to})
		}
		return msgs
	}
	for _, g := range groups {
		var buf []byte
		for _, i := range g {
			buf = append(buf, dgrams[i]...)
		}
		msgs = append(msgs, Message{Buf: buf, Addr: to, SegmentSize: len(dgrams[g[0]])})
	}
	return msgs
}

func TestRoundTrip(t *testing.T) {
	families := []struct{ name, network, addr string }{
		{"ipv4", "udp4", "127.0.0.1:0"},
		{"ipv6", "udp6", "[::1]:0"},
	}
	modes := []struct {
		name    string
		grouped bool
		gso     bool
	}{
		{"plain", false, false},
		{"split", true, false},
		{"gso", true, true},
	}
	for _, fam := range families {
		for _, mode := range modes {
			for _, gro := range []bool{false, true} {
				name := fam.name + "/" + mode.name + "/gro=off"
				if gro {
					name = fam.name + "/" + mode.name + "/gro=on"
				}
				t.Run(name, func(t *testing.T) {
					sc := listenUDP(t, fam.network, fam.addr)
					rc := listenUDP(t, fam.network, fam.addr)
					scaps := setupConn(t, sc, Config{DisableGRO: true, DisableGSO: !mode.gso})
					rcaps := setupConn(t, rc, Config{DisableGSO: true, DisableGRO: !gro})
					if mode.gso && !scaps.GSO {
						t.Skip("kernel refused UDP GSO (UDP_SEGMENT) on this socket")
					}
					if gro && !rcaps.GRO {
						t.Skip("kernel refused UDP_GRO on this socket")
					}
					w, r := writerReader(t, sc, WriterConfig{Batch: 16, GSO: scaps.GSO}, rc, 8)
					dgrams, groups := mixedDatagrams()
					msgs := messagesFor(dgrams, groups, mode.grouped, addrPort(rc))
					n, err := w.WriteBatch(msgs)
					if err != nil || n != len(msgs) {
						t.Fatalf("WriteBatch = %d, %v; want %d", n, err, len(msgs))
					}
					for i, m := range msgs {
						if m.N != len(m.Buf) {
							t.Fatalf("message %d: N = %d, want %d", i, m.N, len(m.Buf))
						}
					}
					bufSize := 2048
					if gro {
						bufSize = GROBufferSize
					}
					got := readDatagrams(t, rc, r, len(dgrams), bufSize)
					checkDatagrams(t, got, dgrams, addrPort(sc))
					coalesced := 0
					for i, g := range got {
						if rcaps.PacketInfo && g.local != addrPort(rc).Addr() {
							t.Fatalf("datagram %d: destination %v, want %v", i, g.local, addrPort(rc).Addr())
						}
						if g.segmented {
							coalesced++
						}
					}
					if coalesced > 0 && !gro {
						t.Fatalf("%d datagrams reported coalesced without GRO", coalesced)
					}
					t.Logf("%d messages sent, %d datagrams received in GRO buffers", len(msgs), coalesced)
				})
			}
		}
	}
}

func TestEmptyDatagram(t *testing.T) {
	sc := listenUDP(t, "udp4", "127.0.0.1:0")
	rc := listenUDP(t, "udp4", "127.0.0.1:0")
	w, r := writerReader(t, sc, WriterConfig{}, rc, 0)
	msgs := []Message{{Addr: addrPort(rc)}, {Buf: []byte("x"), Addr: addrPort(rc)}}
	if n, err := w.WriteBatch(msgs); n != 2 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	got := readDatagrams(t, rc, r, 2, 100)
	checkDatagrams(t, got, [][]byte{{}, []byte("x")}, addrPort(sc))
}
