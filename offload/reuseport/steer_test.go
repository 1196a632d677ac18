package reuseport

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/turboretry/turboretry/quiclb"
)

var testMACKey = quiclb.Key{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func testIDs(tb testing.TB, mac bool) *quiclb.Codec {
	tb.Helper()
	cfg := quiclb.Config{ConfigID: 1, HostID: []byte{0x77}}
	if mac {
		cfg.MACKey = &testMACKey
	}
	c, err := quiclb.NewCodec(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// shortHeader is a 1-RTT packet shape: header byte, DCID, 24 bytes of
// opaque protected payload carrying tag.
func shortHeader(dcid []byte, tag uint32) []byte {
	b := append([]byte{0x40 | 0x03}, dcid...)
	b = binary.BigEndian.AppendUint32(b, tag)
	return append(b, bytes.Repeat([]byte{0x5a}, 20)...)
}

// longHeader is a long-header packet of type typ (v1 numbering) to dcid,
// padded to size bytes and carrying tag.
func longHeader(typ byte, dcid []byte, size int, tag uint32) []byte {
	b := []byte{0xc0 | typ<<4, 0, 0, 0, 1, byte(len(dcid))}
	b = append(b, dcid...)
	b = append(b, 8, 1, 2, 3, 4, 5, 6, 7, 8)
	b = binary.BigEndian.AppendUint32(b, tag)
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

func TestPickRules(t *testing.T) {
	for _, mac := range []bool{true, false} {
		ids := testIDs(t, mac)
		s := steering{ids: ids, k0: 11, k1: 22, workers: [2]int{4}}
		for w := range 4 {
			cid, _ := ids.Append(nil, w)
			if got, r := s.pick(shortHeader(cid, 1)); got != w || r != Steered {
				t.Errorf("mac %v: short header of worker %d: %d %v", mac, w, got, r)
			}
			if got, r := s.pick(longHeader(2, cid, 60, 1)); got != w || r != Steered {
				t.Errorf("mac %v: Handshake of worker %d: %d %v", mac, w, got, r)
			}
		}
		// A worker index beyond the group is not ours (a stale ID of a
		// larger group): default for a short header, hash for a long one.
		cid, _ := ids.Append(nil, 9)
		if got, r := s.pick(shortHeader(cid, 1)); got != -1 || r != Undecodable {
			t.Errorf("mac %v: worker 9 of 4: %d %v", mac, got, r)
		}
		if _, r := s.pick(longHeader(0, cid, 1200, 1)); r != Hashed {
			t.Errorf("mac %v: long header, worker 9 of 4: %v", mac, r)
		}
		// Client-chosen DCIDs hash, the same for every packet.
		client := []byte("client-dcid-0123")
		w1, r1 := s.pick(longHeader(0, client, 1200, 1))
		w2, r2 := s.pick(longHeader(1, client, 300, 2)) // its 0-RTT
		if r1 != Hashed || r2 != Hashed || w1 != w2 || w1 < 0 || w1 > 3 {
			t.Errorf("client DCID: %d %v then %d %v", w1, r1, w2, r2)
		}
		if got, r := s.pick(shortHeader(make([]byte, ids.Len()), 1)); got != -1 || r != Undecodable {
			t.Errorf("zero DCID: %d %v", got, r)
		}
		if got, r := s.pick(shortHeader(cid[:3], 1)[:10]); got != -1 || r != Truncated {
			t.Errorf("10 bytes: %d %v", got, r)
		}
	}
	// With a MAC, a tampered ID is not steered by its worker octet.
	ids := testIDs(t, true)
	s := steering{ids: ids, workers: [2]int{4}}
	cid, _ := ids.Append(nil, 2)
	cid[len(cid)-1] ^= 1
	if got, r := s.pick(shortHeader(cid, 1)); got != -1 || r != Undecodable {
		t.Errorf("tampered ID: %d %v", got, r)
	}
}

// TestPickGenerations: with two generations in the group (a restart in
// progress), every ID goes to its own generation's socket, whichever is
// current, Initials too (the rest of a handshake the draining process
// began: only it can decrypt them); client-chosen DCIDs go to the current
// one.
func TestPickGenerations(t *testing.T) {
	ids := testIDs(t, true)
	for current := range 2 {
		s := steering{ids: ids, k0: 3, k1: 4, workers: [2]int{4, 2}, current: current}
		for gen := range 2 {
			for w := range s.workers[gen] {
				g, _ := ids.GeneratorOf(gen, w)
				cid, _ := g.Append(nil)
				want := gen<<7 | w
				if got, r := s.pick(shortHeader(cid, 1)); got != want || r != Steered {
					t.Errorf("current %d: short header of generation %d worker %d: %d %v", current, gen, w, got, r)
				}
				if got, r := s.pick(longHeader(2, cid, 60, 1)); got != want || r != Steered {
					t.Errorf("current %d: Handshake of generation %d worker %d: %d %v", current, gen, w, got, r)
				}
				// A client's Initial after our first one (its ACK, the rest
				// of a two-datagram ClientHello) names our ID: it went to
				// the current generation, which dropped it, and the
				// handshake in the draining one never completed (a
				// restart test's client refused when that process ended).
				if got, r := s.pick(longHeader(0, cid, 1200, 1)); got != want || r != Steered {
					t.Errorf("current %d: Initial to generation %d worker %d: %d %v", current, gen, w, got, r)
				}
				v2 := longHeader(1, cid, 1200, 1)
				v2[1], v2[2], v2[3], v2[4] = 0x6b, 0x33, 0x43, 0xcf
				if got, r := s.pick(v2); got != want || r != Steered {
					t.Errorf("current %d: v2 Initial to generation %d worker %d: %d %v", current, gen, w, got, r)
				}
				if got, r := s.pick(longHeader(1, cid, 300, 1)); got != want || r != Steered {
					t.Errorf("current %d: v1 0-RTT of generation %d worker %d: %d %v", current, gen, w, got, r)
				}
			}
			// A worker beyond its generation's sockets is not ours.
			g, _ := ids.GeneratorOf(gen, s.workers[gen])
			cid, _ := g.Append(nil)
			if got, r := s.pick(shortHeader(cid, 1)); got != -1 || r != Undecodable {
				t.Errorf("current %d: generation %d worker %d of %d: %d %v", current, gen, s.workers[gen], s.workers[gen], got, r)
			}
		}
		for c := range 16 {
			got, r := s.pick(longHeader(0, []byte{0xc1, byte(c), 2, 3, 4, 5, 6, 7, 8}, 1200, 1))
			if got>>7 != current || got&0x7f >= s.workers[current] || r != Hashed {
				t.Errorf("current %d: client DCID %d: slot %d %v", current, c, got, r)
			}
		}
	}
}

// FuzzPick: any payload gets a worker in range or the default, never a
// panic, and a long header is never left to the default unless truncated.
func FuzzPick(f *testing.F) {
	ids := testIDs(f, true)
	cid, _ := ids.Append(nil, 1)
	f.Add(shortHeader(cid, 1))
	f.Add(longHeader(0, []byte("0123456789abcdef"), 1200, 1))
	f.Add(longHeader(2, cid, 40, 1))
	f.Add([]byte{0xc0, 0, 0, 0, 1, 21})
	s := steering{ids: ids, k0: 5, k1: 6, workers: [2]int{3, 2}, current: 1}
	f.Fuzz(func(t *testing.T, p []byte) {
		w, r := s.pick(p)
		switch {
		case w < -1 || w >= 256 || (w >= 0 && w&0x7f >= s.workers[w>>7]):
			t.Fatalf("slot %d of workers %v", w, s.workers)
		case (w == -1) != (r == Undecodable || r == Truncated):
			t.Fatalf("worker %d with reason %v", w, r)
		case len(p) >= longHeaderLen+maxCIDLen && p[0]&0x80 != 0 && p[5] <= maxCIDLen && w == -1:
			t.Fatalf("long header %x left to the default", p)
		}
	})
}
