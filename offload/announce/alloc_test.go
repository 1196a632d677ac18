package announce

import "testing"

// TestSteadyStateNoAllocs: once its MAC state exists, the Listener handles
// a message, accepted or forged, and the Announcer encodes one, without
// allocating.
func TestSteadyStateNoAllocs(t *testing.T) { atT0(t, testSteadyStateNoAllocs) }

func testSteadyStateNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector inflates allocation counts")
	}
	inserted := 0
	l, err := NewListener(ListenerConfig{Conn: nopConn{}, Key: testKey, CIDLen: 8,
		Insert: func([]byte) { inserted++ }})
	if err != nil {
		t.Fatal(err)
	}
	good := encode(testKey, 8, t0, cids(MaxCIDsPerMessage(8), 8))
	forged := encode(otherKey, 8, t0, cids(3, 8))
	l.handle(good)
	if n := testing.AllocsPerRun(100, func() { l.handle(good); l.handle(forged) }); n != 0 {
		t.Errorf("Listener: %v allocations per message pair", n)
	}
	if inserted != 102*MaxCIDsPerMessage(8) {
		t.Errorf("inserted %d", inserted)
	}
	var m macState
	buf := make([]byte, 0, MaxMessageSize)
	ids := flat(cids(10, 8))
	buf = appendMessage(buf[:0], &m, &testKey, 8, 1, ids)
	if n := testing.AllocsPerRun(100, func() { buf = appendMessage(buf[:0], &m, &testKey, 8, 1, ids) }); n != 0 {
		t.Errorf("encode: %v allocations per message", n)
	}
}
