package reuseport

import (
	"errors"
	"net"
	"sync"
	"testing"
)

// readGroup reads every socket of g into got, naming each datagram by its
// socket's slot (generation << 7 | worker).
func readGroup(t *testing.T, g *Group, got chan received) {
	t.Helper()
	var wg sync.WaitGroup
	for i, c := range g.Conns() {
		wg.Go(func() {
			buf := make([]byte, 2048)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if tag, ok := tagOf(buf[:n]); ok {
					got <- received{slot(g.Generation(), i), tag}
				}
			}
		})
	}
	t.Cleanup(func() {
		_ = g.Close()
		wg.Wait()
	})
}

// TestHandoverOnLoopback is a restart at the socket level: a group of 4
// workers (generation 0) hands its program to a group of 2 (generation 1)
// that joins the port. Before the switch new clients still go to
// generation 0; after it they go to generation 1 while every ID of
// generation 0 (short headers and Handshakes, from any port) still reaches
// its generation-0 worker, Initials too (the rest of a handshake the old
// process began). Switching back (the
// successor failed) returns new clients to generation 0. A third group
// cannot take generation 0 while its sockets are open, and can once they
// are closed (the old process exited).
func TestHandoverOnLoopback(t *testing.T) {
	old, got := testGroup(t, true)
	ids := old.cfg.IDs
	inh, err := old.Handover()
	if err != nil {
		t.Fatal(err)
	}
	if inh.Generation != 0 || inh.Workers != 4 || len(inh.Files) != InheritedFiles {
		t.Fatalf("inheritance %+v", inh)
	}
	if key, ok, err := inh.MACKey(); err != nil || !ok || key != testMACKey {
		t.Fatalf("MACKey: %x, %v, %v; want the program's %x", key, ok, err, testMACKey)
	}
	successor, err := Join(Config{Addr: old.LocalAddr().String(), Workers: 2, IDs: ids}, inh)
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	readGroup(t, successor, got)
	if successor.Generation() != 1 || successor.Workers() != 2 || successor.Mode() != ModeSteered {
		t.Fatalf("successor: generation %d, %d workers, %v", successor.Generation(), successor.Workers(), successor.Mode())
	}

	var senders []*net.UDPConn
	for range 6 {
		senders = append(senders, sender(t, old.LocalAddr()))
	}
	tag := uint32(0)
	next := func() uint32 { tag++; return tag }
	newClients := func(wantGen int) {
		t.Helper()
		for c := range 8 {
			dcid := []byte{0xc1, byte(c), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
			for i, s := range senders {
				if w := deliver(t, s, got, longHeader(0, dcid, 1200, next())); w>>7 != wantGen {
					t.Fatalf("new client %d from port %d: slot %d, want generation %d", c, i, w, wantGen)
				}
			}
		}
	}
	ownIDs := func() {
		t.Helper()
		for gen, workers := range []int{4, 2} {
			for w := range workers {
				g, _ := ids.GeneratorOf(gen, w)
				cid, _ := g.Append(nil)
				for i, s := range senders {
					p := shortHeader(cid, next())
					if i%2 == 1 {
						p = longHeader(2, cid, 80, tag)
					}
					if got := deliver(t, s, got, p); got != slot(gen, w) {
						t.Fatalf("generation %d worker %d from port %d: slot %d", gen, w, i, got)
					}
				}
			}
		}
	}

	newClients(0) // not switched yet
	ownIDs()
	if err := successor.Activate(); err != nil {
		t.Fatal(err)
	}
	if cur, _ := old.CurrentGeneration(); cur != 1 {
		t.Fatalf("the old group reads generation %d after the switch", cur)
	}
	newClients(1)
	ownIDs()
	// An Initial to a generation-0 ID (the rest of a handshake the old
	// process began, or a client it sent a Retry) goes to that process,
	// which alone can decrypt it.
	retried, _ := ids.Append(nil, 3) // generation 0, worker 3
	for i, s := range senders {
		if w := deliver(t, s, got, longHeader(0, retried, 1200, next())); w != 3 {
			t.Fatalf("Initial to generation 0 worker 3, port %d: slot %d", i, w)
		}
	}
	if w := deliver(t, senders[0], got, longHeader(2, retried, 80, next())); w != 3 {
		t.Fatalf("Handshake to generation 0 worker 3: slot %d", w)
	}

	// Rollback: the old process takes new connections back.
	if err := old.Activate(); err != nil {
		t.Fatal(err)
	}
	newClients(0)
	if err := successor.Activate(); err != nil {
		t.Fatal(err)
	}

	inh2, err := successor.Handover()
	if err != nil {
		t.Fatal(err)
	}
	if g, err := Join(Config{Addr: old.LocalAddr().String(), Workers: 2, IDs: ids}, inh2); !errors.Is(err, ErrGenerationBusy) {
		if g != nil {
			g.Close()
		}
		t.Fatalf("Join while generation 0 still has sockets: %v, want ErrGenerationBusy", err)
	}
	// A successor with another ID layout would issue IDs the program
	// cannot verify: refused.
	inh3, _ := successor.Handover()
	if g, err := Join(Config{Addr: old.LocalAddr().String(), Workers: 1, IDs: testIDs(t, false)}, inh3); !errors.Is(err, ErrConfig) {
		if g != nil {
			g.Close()
		}
		t.Fatalf("Join with another layout: %v, want ErrConfig", err)
	}
	_ = old.Close() // the old process exited
	inh4, _ := successor.Handover()
	third, err := Join(Config{Addr: old.LocalAddr().String(), Workers: 3, IDs: ids}, inh4)
	if err != nil {
		t.Fatalf("Join after generation 0 closed: %v", err)
	}
	readGroup(t, third, got)
	if err := third.Activate(); err != nil {
		t.Fatal(err)
	}
	newClients(0)
	g1, _ := ids.GeneratorOf(1, 1)
	cid, _ := g1.Append(nil)
	if w := deliver(t, senders[1], got, shortHeader(cid, next())); w != slot(1, 1) {
		t.Fatalf("generation 1 worker 1 after the third process took over: slot %d", w)
	}
}
