package quic

import (
	"fmt"
	"testing"
	"time"
)

// TestEarlyQueueBounded: 0-RTT datagrams for unknown connection IDs, as an
// attacker may send them without end, take at most earlyQueueConns IDs of
// earlyQueuePackets datagrams, and each for earlyQueueTTL; then the room is
// free again.
func TestEarlyQueueBounded(t *testing.T) {
	var q earlyQueue
	now := time.Now()
	pkt := func() receivedPacket { b := getBuffer(); return receivedPacket{buf: b, data: (*b)[:100]} }
	kept := 0
	for i := range 2 * earlyQueueConns {
		for range 2 * earlyQueuePackets {
			if q.add(fmt.Appendf(nil, "cid-%d", i), pkt(), now) {
				kept++
			}
		}
	}
	if want := earlyQueueConns * earlyQueuePackets; kept != want {
		t.Fatalf("kept %d datagrams, want at most %d", kept, want)
	}
	if got := q.take([]byte("cid-0"), now.Add(earlyQueueTTL/2)); len(got) != earlyQueuePackets {
		t.Fatalf("took %d datagrams for the first ID, want %d", len(got), earlyQueuePackets)
	}
	if got := q.take([]byte("cid-0"), now); got != nil {
		t.Fatal("an ID was taken twice")
	}
	if !q.add([]byte("late"), pkt(), now.Add(earlyQueueTTL/2)) {
		t.Fatal("no room after an ID was taken")
	}
	// Time is up for the rest: they are freed, and a new ID fits.
	later := now.Add(earlyQueueTTL)
	if got := q.take([]byte("cid-1"), later); got != nil {
		t.Fatalf("an expired ID still had %d datagrams", len(got))
	}
	if len(q.m) != 1 {
		t.Fatalf("%d IDs left after expiry, want the late one", len(q.m))
	}
	q.clear()
	if len(q.m) != 0 {
		t.Fatal("clear left entries")
	}
}
