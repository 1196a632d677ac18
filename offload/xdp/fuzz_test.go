//go:build linux

package xdp

import (
	"testing"
)

// FuzzVerdictMAC is FuzzVerdict with authenticated server IDs: the model
// passes those whose MAC verifies (PassMAC) before it asks the cache.
func FuzzVerdictMAC(f *testing.F) {
	ids := testCodec(f)
	known, _ := ids.Append(nil, 3)         // cached as well: the MAC must win
	client := []byte("client-chosen-0rtt") // a 0-RTT DCID, cached by its prefix
	f.Add(udp4(testPort, shortPacket(known)))
	f.Add(udp6(testPort, longPacket(typeHandshake, 1, known, 64)))
	f.Add(udp4(testPort, longPacket(type0RTT, 1, client, 64)))
	f.Add(udp4(testPort, longPacket(type0RTT, 1, append(append([]byte{}, known...), 1, 2), 64)))
	f.Add(udp4(testPort, shortPacket([]byte("0123456789"))))
	p := loadMAC(f, ids)
	for _, cid := range [][]byte{known, client[:ids.Len()]} {
		if err := p.Cache().Insert(cid); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 14 || len(frame) > maxRunFrame {
			t.Skip("the kernel's test run needs 14..one page of bytes")
		}
		wantAct, wantReason := modelVerdict(frame, testPort, ids.Len(), p.Cache().Lookup, ids.Verify)
		expect(t, p, frame, wantAct, wantReason)
	})
}

// fuzzKnownCID is in the cache during FuzzVerdict (seeds use it).
var fuzzKnownCID = []byte("knownCID")

// maxRunFrame keeps frames within one page, which BPF_PROG_TEST_RUN
// accepts for a program without multi-buffer support.
const maxRunFrame = 3000

// FuzzVerdict runs arbitrary frames through the loaded program with
// BPF_PROG_TEST_RUN and checks action and counter against modelVerdict,
// and that the frame comes out unchanged.
func FuzzVerdict(f *testing.F) {
	known := fuzzKnownCID
	f.Add(udp4(testPort, shortPacket(known)))
	f.Add(udp6(testPort, longPacket(typeHandshake, 1, known, 64)))
	f.Add(udp4(testPort, longPacket(type0RTT, 1, []byte("unknown!"), 64)))
	f.Add(udp6(testPort, longPacket(typeInitial, 1, known, 1200)))
	f.Add(udp4(testPort, longPacket(typeInitial, 2, known, 200)))
	f.Add(ethFrame(0x0800, ipv4Packet(17, 3, udpDatagram(testPort, shortPacket(known)))))
	f.Add(ethFrame(0x86dd, ipv6Packet(44, udpDatagram(testPort, shortPacket(known)))))
	f.Add(ethFrame(0x0806, make([]byte, 28)))
	p := loadFiltering(f)
	if err := p.Cache().Insert(known); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 14 || len(frame) > maxRunFrame {
			t.Skip("the kernel's test run needs 14..one page of bytes")
		}
		wantAct, wantReason := modelVerdict(frame, testPort, len(known), func(cid []byte) bool {
			// Only ACTIVE holds entries, so Lookup has no side effect.
			return p.Cache().Lookup(cid)
		}, nil)
		expect(t, p, frame, wantAct, wantReason)
	})
}
