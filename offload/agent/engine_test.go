package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

func TestConfigErrors(t *testing.T) {
	kr := testKeyRing(t)
	bad := []Config{
		{},
		{KeyRing: kr, CIDLen: 21},
		{KeyRing: kr, CIDLen: -1},
		{KeyRing: kr, Workers: -2},
		{KeyRing: kr, RetryMaxAge: -time.Second},
	}
	for i, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	e, err := New(Config{KeyRing: kr})
	if err != nil {
		t.Fatal(err)
	}
	if e.NumWorkers() != 1 || e.cfg.CIDLen != DefaultCIDLen {
		t.Fatalf("defaults: %d workers, CIDLen %d", e.NumWorkers(), e.cfg.CIDLen)
	}
	// Without a cache the agent still works (host mode).
	mustProcess(t, e.Worker(0), clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), clientAddr, ReasonRetry)
}

func TestHeartbeatAndPause(t *testing.T) { synctest.Test(t, testHeartbeatAndPause) }

func testHeartbeatAndPause(t *testing.T) {
	var beats []time.Time
	start := time.Now()
	env := newTestEnv(t, func(c *Config) { c.OnHeartbeat = func(t time.Time) { beats = append(beats, t) } })
	if !env.eng.Heartbeat().IsZero() {
		t.Fatal("heartbeat before the first beat")
	}
	if !env.eng.Beat() || !env.eng.Heartbeat().Equal(start) || len(beats) != 1 {
		t.Fatalf("first beat: %v, callbacks %d", env.eng.Heartbeat(), len(beats))
	}
	pkt := clientInitial(t, wire.Version1, odcid, cscid, nil, 1200)
	mustProcess(t, env.w, pkt, clientAddr, ReasonRetry)

	env.eng.Pause()
	time.Sleep(time.Second)
	if env.eng.Beat() || !env.eng.Heartbeat().Equal(start) || len(beats) != 1 {
		t.Fatal("a paused engine beat")
	}
	mustProcess(t, env.w, pkt, clientAddr, ReasonPaused)
	if env.w.ObserveEgress(longPacket(t, wire.PacketTypeInitial, wire.Version1, cscid, odcid, 100)) || env.cache.len() != 0 {
		t.Fatal("a paused engine learned from egress")
	}

	env.eng.Resume()
	if !env.eng.Beat() || !env.eng.Heartbeat().Equal(start.Add(time.Second)) || len(beats) != 2 {
		t.Fatal("no beat after Resume")
	}
	mustProcess(t, env.w, pkt, clientAddr, ReasonRetry)
}

// TestRunHeartbeat: the loop beats (at once, then per interval) and stops
// with its context. No timing is asserted, only that beats arrive.
func TestRunHeartbeat(t *testing.T) {
	ch := make(chan time.Time, 16)
	env := newTestEnv(t, func(c *Config) {
		c.HeartbeatInterval = time.Millisecond
		c.OnHeartbeat = func(t time.Time) {
			select {
			case ch <- t:
			default:
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { env.eng.RunHeartbeat(ctx); close(done) }()
	first := <-ch
	second := <-ch
	if second.Before(first) {
		t.Fatal("heartbeats went backwards")
	}
	cancel()
	<-done
	if env.eng.Heartbeat().IsZero() {
		t.Fatal("no heartbeat recorded")
	}
}

// TestStats runs in a synctest bubble: no time passes before the heartbeat
// it checks.
func TestStats(t *testing.T) { synctest.Test(t, testStats) }

func testStats(t *testing.T) {
	start := time.Now()
	env := newTestEnv(t, func(c *Config) { c.Workers = 2 })
	w0, w1 := env.eng.Worker(0), env.eng.Worker(1)
	pkt := clientInitial(t, wire.Version1, odcid, cscid, nil, 1200)
	for range 3 {
		mustProcess(t, w0, pkt, clientAddr, ReasonRetry)
	}
	mustProcess(t, w1, pkt, clientAddr, ReasonRetry)
	mustProcess(t, w1, []byte{0x40, 1}, clientAddr, ReasonUnknownConnection)
	w1.ObserveEgress(longPacket(t, wire.PacketTypeHandshake, wire.Version1, cscid, odcid, 100))

	// Not yet published: fewer than publishEvery events per worker.
	if s := env.eng.Stats(); s.Packets[ReasonRetry] != 0 {
		t.Fatalf("unpublished counts visible: %v", s.Packets[ReasonRetry])
	}
	w0.Flush()
	w1.Flush()
	s := env.eng.Stats()
	if s.Packets[ReasonRetry] != 4 || s.Packets[ReasonUnknownConnection] != 1 || s.EgressLearned != 1 {
		t.Fatalf("stats %+v", s)
	}
	if d, r, f := s.Verdicts(); d != 1 || r != 4 || f != 0 {
		t.Fatalf("verdicts %d %d %d", d, r, f)
	}
	// publishEvery events publish on their own.
	for range publishEvery {
		w0.Process(nil, clientAddr, nil)
	}
	if got := env.eng.Stats().Packets[ReasonMalformed]; got != publishEvery {
		t.Fatalf("auto-published malformed = %d", got)
	}

	if s := env.eng.Stats(); s.Packets[ReasonMalformed] != publishEvery || s.Packets[ReasonRetryTokenForwarded] != 0 {
		t.Fatalf("stats %+v", s)
	}
	// The names app/metrics exports as labels of
	// turboretry_agent_packets_total.
	if r := ReasonUnknownConnection; r.Verdict().String() != "drop" || r.String() != "unknown_connection" {
		t.Errorf("labels %q, %q", r.Verdict(), r)
	}
	if r := ReasonRetryTokenForwarded; r.Verdict().String() != "forward" || r.String() != "retry_token" {
		t.Errorf("labels %q, %q", r.Verdict(), r)
	}
	env.eng.Beat()
	if hb := env.eng.Heartbeat(); !hb.Equal(start) || env.eng.Paused() {
		t.Errorf("heartbeat %v paused %v, want %v, false", hb, env.eng.Paused(), start)
	}
}
