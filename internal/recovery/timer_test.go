package recovery

import (
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
)

func expectTimer(t *testing.T, r *Recovery, want time.Time) {
	t.Helper()
	if got := r.LossDetectionTimeout(); !got.Equal(want) {
		if want.IsZero() {
			t.Fatalf("timer armed at t0+%v, want none", got.Sub(t0))
		}
		t.Fatalf("timer t0+%v, want t0+%v", got.Sub(t0), want.Sub(t0))
	}
}

func fire(t *testing.T, r *Recovery, now time.Time) TimeoutAction {
	t.Helper()
	var ev Events
	a := r.OnLossDetectionTimeout(now, &ev)
	if len(ev.Lost) != 0 || len(ev.Acked) != 0 {
		t.Fatalf("PTO reported packets: %v %v", numbers(ev.Lost), numbers(ev.Acked))
	}
	return a
}

func TestPTOExponentialBackoff(t *testing.T) {
	r := confirmedServer()
	expectTimer(t, r, time.Time{})
	send(t, r, protocol.SpaceAppData, 0, t0)
	// 999 ms initial PTO + 25 ms max_ack_delay for ApplicationData.
	expectTimer(t, r, t0.Add(ms(1024)))
	if a := r.OnLossDetectionTimeout(t0.Add(ms(1023)), nil); a.Kind != TimeoutNone || r.PTOCount() != 0 {
		t.Fatal("PTO fired early")
	}
	now := t0.Add(ms(1024))
	a := fire(t, r, now)
	if a != (TimeoutAction{Kind: TimeoutProbe, Space: protocol.SpaceAppData, Probes: 2}) || r.PTOCount() != 1 {
		t.Fatalf("action %+v, pto_count %d", a, r.PTOCount())
	}
	// Backoff doubles both terms: t0 + 2*1024.
	expectTimer(t, r, t0.Add(ms(2048)))
	// The probes restart the period from their send time.
	send(t, r, protocol.SpaceAppData, 1, now)
	send(t, r, protocol.SpaceAppData, 2, now)
	expectTimer(t, r, now.Add(ms(2048)))
	fire(t, r, now.Add(ms(2048)))
	expectTimer(t, r, now.Add(ms(4096)))
	fire(t, r, now.Add(ms(4096)))
	expectTimer(t, r, now.Add(ms(8192)))
	if r.PTOCount() != 3 {
		t.Fatalf("pto_count %d, want 3", r.PTOCount())
	}
	// An ACK resets the backoff.
	ack(t, r, protocol.SpaceAppData, now.Add(ms(5000)), 0, rng(2, 2))
	if r.PTOCount() != 0 {
		t.Fatalf("pto_count %d after ACK", r.PTOCount())
	}
}

func TestPTOSpaceSelection(t *testing.T) {
	r := New(Config{}) // client
	r.SetHandshakeKeys(t0)
	send(t, r, protocol.SpaceInitial, 0, t0)
	send(t, r, protocol.SpaceHandshake, 0, t0.Add(ms(10)))
	send(t, r, protocol.SpaceAppData, 0, t0.Add(ms(20))) // before confirmation
	// The earliest space wins; ApplicationData is not eligible yet.
	expectTimer(t, r, t0.Add(ms(999)))
	if a := fire(t, r, t0.Add(ms(999))); a.Space != protocol.SpaceInitial || a.Kind != TimeoutProbe {
		t.Fatalf("action %+v, want a probe in Initial", a)
	}
	// An Initial ACK does not prove the server validated the client:
	// pto_count stays.
	ack(t, r, protocol.SpaceInitial, t0.Add(ms(1000)), 0, rng(0, 0))
	if r.PTOCount() != 1 {
		t.Fatalf("pto_count %d after an Initial ACK, want 1", r.PTOCount())
	}
	// srtt = 1000 ms, rttvar 500: PTO 3000 ms; a client backs off no
	// further before the handshake is confirmed (above 1 s):
	// Handshake's at 10 ms + 3000 ms.
	expectTimer(t, r, t0.Add(ms(3010)))
	if a := fire(t, r, t0.Add(ms(3010))); a.Space != protocol.SpaceHandshake {
		t.Fatalf("action %+v, want Handshake", a)
	}
	// A Handshake ACK validates the client: pto_count resets, and with
	// only pre-confirmation ApplicationData in flight no PTO is armed.
	ack(t, r, protocol.SpaceHandshake, t0.Add(ms(6100)), 0, rng(0, 0))
	if r.PTOCount() != 0 {
		t.Fatalf("pto_count %d after a Handshake ACK", r.PTOCount())
	}
	expectTimer(t, r, time.Time{})
	// Confirmation arms the ApplicationData PTO with max_ack_delay.
	r.SetHandshakeConfirmed(t0.Add(ms(6100)))
	want := t0.Add(ms(20)).Add(r.RTT().PTOBase() + DefaultMaxAckDelay)
	expectTimer(t, r, want)
	if a := fire(t, r, want); a.Space != protocol.SpaceAppData {
		t.Fatalf("action %+v, want ApplicationData", a)
	}
}

func TestClientAntiDeadlockPTO(t *testing.T) {
	r := New(Config{})
	send(t, r, protocol.SpaceInitial, 0, t0)
	ack(t, r, protocol.SpaceInitial, t0.Add(ms(100)), 0, rng(0, 0)) // srtt 100: PTO 300
	// Nothing in flight, but the client is not validated yet: it must
	// keep a timer, counted from now.
	now := t0.Add(ms(100))
	expectTimer(t, r, now.Add(ms(300)))
	now = now.Add(ms(300))
	a := fire(t, r, now)
	if a != (TimeoutAction{Kind: TimeoutProbe, Space: protocol.SpaceInitial, Probes: 1}) {
		t.Fatalf("action %+v, want one padded Initial", a)
	}
	expectTimer(t, r, now.Add(ms(600)))
	// With Handshake keys the probe is a Handshake packet.
	r.SetHandshakeKeys(now)
	if a := fire(t, r, now.Add(ms(600))); a.Space != protocol.SpaceHandshake || a.Probes != 1 {
		t.Fatalf("action %+v, want one Handshake packet", a)
	}
	// Confirmation ends it.
	r.SetHandshakeConfirmed(now.Add(ms(700)))
	expectTimer(t, r, time.Time{})

	// A server never arms the anti-deadlock timer.
	s := New(Config{IsServer: true})
	send(t, s, protocol.SpaceInitial, 0, t0)
	ack(t, s, protocol.SpaceInitial, t0.Add(ms(100)), 0, rng(0, 0))
	expectTimer(t, s, time.Time{})
}

func TestAmplificationLimitedServer(t *testing.T) {
	r := New(Config{IsServer: true})
	send(t, r, protocol.SpaceInitial, 0, t0)
	expectTimer(t, r, t0.Add(ms(999)))
	r.SetAmplificationLimited(true, t0.Add(ms(1)))
	expectTimer(t, r, time.Time{})
	if a := r.OnLossDetectionTimeout(t0.Add(ms(5000)), nil); a.Kind != TimeoutNone {
		t.Fatalf("disarmed timer acted: %+v", a)
	}
	r.SetAmplificationLimited(false, t0.Add(ms(2)))
	expectTimer(t, r, t0.Add(ms(999)))

	// The loss timer is not subject to the limit.
	send(t, r, protocol.SpaceInitial, 1, t0.Add(ms(1)))
	ack(t, r, protocol.SpaceInitial, t0.Add(ms(51)), 0, rng(1, 1))
	// Packet 0 is lost at 9/8 * 50 ms after it was sent.
	lossAt := t0.Add(56250 * time.Microsecond)
	expectTimer(t, r, lossAt)
	r.SetAmplificationLimited(true, t0.Add(ms(61)))
	expectTimer(t, r, lossAt)
	var ev Events
	if a := r.OnLossDetectionTimeout(lossAt, &ev); a.Kind != TimeoutLoss || !equalNumbers(ev.Lost, 0) {
		t.Fatalf("action %+v lost %v", a, numbers(ev.Lost))
	}
}

// The PTO period, max_ack_delay included, backs off to a minute and no
// further (as quic-go caps it); the exponent never overflows.
func TestPTOBackoffBounded(t *testing.T) {
	r := confirmedServer()
	r.SetMaxAckDelay(ms(25))
	send(t, r, protocol.SpaceAppData, 0, t0)
	for range 100 {
		// No packet is sent in between: each period counts from t0.
		at := r.LossDetectionTimeout()
		if at.IsZero() || at.Before(t0) || at.Sub(t0) > time.Minute {
			t.Fatalf("timer %v after %d PTOs", at, r.PTOCount())
		}
		fire(t, r, at)
	}
	if r.PTOCount() != 100 {
		t.Fatalf("pto_count %d", r.PTOCount())
	}
	expectTimer(t, r, t0.Add(time.Minute))
}

func TestClientHandshakePTOCapped(t *testing.T) {
	for _, server := range []bool{false, true} {
		r := New(Config{IsServer: server})
		// Initial RTT 333 ms: PTO 999 ms, then backed off; a client probes
		// at least once a second until the handshake is confirmed.
		want := []time.Duration{ms(999), ms(1998), ms(3996), ms(7992)}
		if !server {
			want = []time.Duration{ms(999), ms(1000), ms(1000), ms(1000)}
		}
		send(t, r, protocol.SpaceInitial, 0, t0)
		last := t0
		for i := range want {
			at := r.LossDetectionTimeout()
			if got := at.Sub(last); got != want[i] {
				t.Fatalf("server %v: PTO %d after %v, want %v", server, i+1, got, want[i])
			}
			fire(t, r, at)
			send(t, r, protocol.SpaceInitial, uint64(i+1), at)
			last = at
		}
		if !server {
			// Once confirmed, the backoff is the RFC's again.
			r.SetHandshakeConfirmed(last)
			send(t, r, protocol.SpaceAppData, 0, last)
			if got := r.LossDetectionTimeout().Sub(last); got <= ms(1000) {
				t.Fatalf("PTO %v after confirmation, want the backed-off period", got)
			}
		}
	}
}

// With an idle timeout in force, the backoff stops at a quarter of it:
// a peer that has heard nothing for its idle timeout closes, so a probe
// later than that is wasted, and several before it give lost ones a
// second chance. A PTO already longer than the quarter is not shortened.
func TestPTOBackoffStopsShortOfIdleTimeout(t *testing.T) {
	r := confirmedServer()
	r.SetIdleTimeout(30 * time.Second)
	send(t, r, protocol.SpaceAppData, 0, t0)
	// 999 ms initial PTO + 25 ms max_ack_delay, doubled per timeout up to
	// 7.5 s.
	want := []time.Duration{ms(1024), ms(2048), ms(4096), ms(7500), ms(7500), ms(7500)}
	last := t0
	for i, w := range want {
		at := r.LossDetectionTimeout()
		if got := at.Sub(last); got != w {
			t.Fatalf("PTO %d after %v, want %v", i+1, got, w)
		}
		fire(t, r, at)
		send(t, r, protocol.SpaceAppData, uint64(i+1), at)
		last = at
	}

	r = confirmedServer()
	r.SetIdleTimeout(2 * time.Second)
	send(t, r, protocol.SpaceAppData, 0, t0)
	fire(t, r, t0.Add(ms(1024)))
	send(t, r, protocol.SpaceAppData, 1, t0.Add(ms(1024)))
	expectTimer(t, r, t0.Add(ms(2048)))
}

// A server's Initial and Handshake PTO stops backing off at a quarter of
// the handshake idle timeout (the idle timeout in force until the
// handshake completes): quic-go's client, whose handshake idle timeout is
// 5 s by default, gets a probe every 1.25 s from a server with the same
// default, and every 5 s from one with 20 s (the interop runner's, with a
// client that waits as long). The amplification limit still disarms it.
func TestServerHandshakePTOStopsShortOfIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		idle time.Duration
		want []time.Duration
	}{
		{5 * time.Second, []time.Duration{ms(999), ms(1250), ms(1250), ms(1250)}},
		{20 * time.Second, []time.Duration{ms(999), ms(1998), ms(3996), ms(5000), ms(5000)}},
	} {
		r := New(Config{IsServer: true, IdleTimeout: tc.idle})
		send(t, r, protocol.SpaceHandshake, 0, t0)
		last := t0
		for i, w := range tc.want {
			at := r.LossDetectionTimeout()
			if got := at.Sub(last); got != w {
				t.Fatalf("handshake idle timeout %v: PTO %d after %v, want %v", tc.idle, i+1, got, w)
			}
			fire(t, r, at)
			send(t, r, protocol.SpaceHandshake, uint64(i+1), at)
			last = at
		}
		r.SetAmplificationLimited(true, last)
		expectTimer(t, r, time.Time{})
		r.SetAmplificationLimited(false, last.Add(ms(10)))
		expectTimer(t, r, last.Add(tc.want[len(tc.want)-1]))
	}
}
