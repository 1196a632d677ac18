package datapath

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/xdp"
)

// TestRetryThenAdmission walks one client through the datapath: its first
// Initial is answered with a Retry sent through AF_XDP TX (integrity tag
// and agent token check out), its second Initial, carrying the token, goes
// to Deliver and not to the kernel socket, and afterwards a short-header
// packet to the Retry's SCID passes the fast path to the kernel socket
// while one to an unknown CID is dropped.
func TestRetryThenAdmission(t *testing.T) {
	env := newTestEnv(t, nil, hangGuard)
	dcid, scid := randomCID(t, 8), randomCID(t, 8)
	env.send(t, clientInitial(t, dcid, scid))
	buf := make([]byte, 2048)
	n, err := readUDP(env.client, buf)
	if err != nil {
		env.dump(t)
		t.Fatalf("client got no Retry: %v (stats %+v)", err, env.stats(t))
	}
	rscid, tok := env.checkRetry(t, buf[:n], dcid, scid)

	second := initialWithToken(t, rscid, scid, tok)
	env.send(t, second)
	select {
	case d := <-env.delivered:
		if !bytes.Equal(d.pkt, second) || d.from != clientAP || d.to != serverAP {
			t.Fatalf("Deliver got %d bytes from %v to %v; want the second Initial (%d bytes) from %v to %v",
				len(d.pkt), d.from, d.to, len(second), clientAP, serverAP)
		}
	case <-time.After(hangGuard):
		t.Fatalf("the second Initial never reached Deliver (stats %+v)", env.stats(t))
	}

	// On a one-queue veth, frames are handled in order: if the first
	// datagram the kernel socket reads is the known-CID packet, neither
	// the second Initial nor the unknown-CID packet got there.
	unknown, known := shortHeader(randomCID(t, 8), 0xee), shortHeader(rscid, 0x11)
	env.send(t, unknown)
	env.send(t, known)
	n, err = readUDP(env.server, buf)
	if err != nil {
		t.Fatalf("kernel socket: %v (stats %+v)", err, env.stats(t))
	}
	if !bytes.Equal(buf[:n], known) {
		t.Fatalf("kernel socket got %x..., want the short-header packet to the admitted RSCID", buf[:min(n, 16)])
	}
	s := env.waitStats(t, "the agent's counters", func(s Stats) bool {
		return s.Agent.Packets[agent.ReasonRetry] == 1 && s.Agent.Packets[agent.ReasonRetryTokenForwarded] == 1
	})
	if s.XDP[xdp.DropMiss] != 1 || s.XDP[xdp.PassHit] != 1 || s.XDP[xdp.AgentInitial] != 2 {
		t.Errorf("XDP counters: drop_miss %d pass_hit %d agent_initial %d; want 1, 1, 2",
			s.XDP[xdp.DropMiss], s.XDP[xdp.PassHit], s.XDP[xdp.AgentInitial])
	}
	if s.FramesRX != 2 || s.FramesTX != 1 || s.Delivered != 1 || s.Unparsed != 0 || s.ReplyFailed != 0 {
		t.Errorf("frames: %+v; want 2 received, 1 sent, 1 delivered", s)
	}
	if s.Agent.Packets[agent.ReasonRetry] != 1 || s.Paused || s.Heartbeat.IsZero() {
		t.Errorf("agent: %d Retries, paused %v, heartbeat %v; want 1, false, set", s.Agent.Packets[agent.ReasonRetry], s.Paused, s.Heartbeat)
	}
}

// TestFloodNeverReachesKernel sends N real client Initials, in bounded
// rounds, and checks that the agent answered each with a Retry that
// reached the client, that the counters agree with what was sent, and that
// none of them reached the kernel socket or Deliver.
func TestFloodNeverReachesKernel(t *testing.T) {
	const total, round = 2000, 50
	env := newTestEnv(t, nil, hangGuard)
	gen, err := flood.NewGenerator(flood.GeneratorConfig{PoolSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 0, flood.UDPPayloadSize)
	buf := make([]byte, 2048)
	for sent := 0; sent < total; {
		for range round {
			if pkt, err = gen.Next(pkt[:0]); err != nil {
				t.Fatal(err)
			}
			env.send(t, pkt)
			sent++
		}
		// Closed loop: wait for this round's Retries, so no queue on the
		// way (veth ring, AF_XDP RX ring) overflows.
		for range round {
			n, err := readUDP(env.client, buf)
			if err != nil {
				t.Fatalf("after %d Initials: Retry missing: %v (stats %+v)", sent, err, env.stats(t))
			}
			if buf[0]&0xf0 != 0xf0 { // long header, fixed bit, type Retry (v1)
				t.Fatalf("client got a %d-byte non-Retry %x...", n, buf[:min(n, 8)])
			}
		}
	}
	env.checkFloodAnswered(t, total)
}

// TestSpoofedFloodNeverReachesKernel sends N real client Initials as raw
// frames with spoofed sources from 198.19.0.0/16, in bounded rounds: the
// agent answers each with a Retry frame (to the spoofed address, so the
// client's kernel discards it), and nothing reaches the kernel socket.
func TestSpoofedFloodNeverReachesKernel(t *testing.T) {
	const total, round = 2000, 50
	env := newTestEnv(t, nil, hangGuard)
	gen, err := flood.NewGenerator(flood.GeneratorConfig{PoolSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	src, err := flood.NewFrameSource(gen, flood.FrameConfig{
		Target: serverAP,
		Spoof:  netip.MustParsePrefix("198.19.0.0/16"), // clear of the test's /30
		SrcMAC: macC[:],
		DstMAC: macS[:],
	})
	if err != nil {
		t.Fatal(err)
	}
	var sender *flood.PacketSender
	env.in(t, env.nsC, func() {
		if sender, err = flood.NewPacketSender(ifC, round); err != nil {
			t.Fatalf("NewPacketSender: %v", err)
		}
	})
	t.Cleanup(func() { _ = sender.Close() })
	frames := make([][]byte, round)
	for sent := 0; sent < total; sent += round {
		for i := range frames {
			if frames[i], err = src.Next(frames[i][:0]); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := sender.Send(frames); err != nil || n != round {
			t.Fatalf("Send: %d of %d, %v", n, round, err)
		}
		// Closed loop on the counters, so no ring on the way overflows.
		want := uint64(sent + round)
		env.waitStats(t, "the round's Retries", func(s Stats) bool { return s.FramesTX >= want })
	}
	env.checkFloodAnswered(t, total)
}

// checkFloodAnswered checks the counters after a flood of total Initials
// that all got Retries, then that the kernel socket received none of them:
// a sentinel the fast path passes must be the first datagram it reads.
func (env *testEnv) checkFloodAnswered(t *testing.T, total uint64) {
	t.Helper()
	// A worker may publish its verdicts before it transmits and counts the
	// batch's frames (every 64 events): wait for the frame counts too.
	s := env.waitStats(t, "the agent's counters", func(s Stats) bool {
		return s.Agent.Packets[agent.ReasonRetry] == total && s.FramesRX >= total && s.FramesTX >= total
	})
	drop, reply, fwd := s.Agent.Verdicts()
	if drop != 0 || reply != total || fwd != 0 {
		t.Errorf("agent verdicts: drop %d, reply %d, forward %d; want 0, %d, 0", drop, reply, fwd, total)
	}
	if s.XDP[xdp.AgentInitial] != total || s.FramesRX != total || s.FramesTX != total || s.Delivered != 0 {
		t.Errorf("agent_initial %d, frames rx %d tx %d, delivered %d; want %d, %d, %d, 0",
			s.XDP[xdp.AgentInitial], s.FramesRX, s.FramesTX, s.Delivered, total, total, total)
	}
	if s.XDP[xdp.PassFailOpen] != 0 || s.XDP[xdp.PassNoSocket] != 0 {
		t.Errorf("Initials passed to the kernel: fail-open %d, no socket %d", s.XDP[xdp.PassFailOpen], s.XDP[xdp.PassNoSocket])
	}
	cid := randomCID(t, 8)
	if err := env.dp.prog.Cache().Insert(cid); err != nil {
		t.Fatal(err)
	}
	sentinel := shortHeader(cid, 0x5e)
	env.send(t, sentinel)
	buf := make([]byte, 2048)
	n, err := readUDP(env.server, buf)
	if err != nil || !bytes.Equal(buf[:n], sentinel) {
		t.Fatalf("kernel socket: first datagram %x... (%v); want the sentinel, no Initial", buf[:min(max(n, 0), 16)], err)
	}
}

// TestFailOpen pauses the agent: once the heartbeat is stale the program
// passes Initials to the kernel socket; after Resume they get Retries
// again.
func TestFailOpen(t *testing.T) {
	const stale = 200 * time.Millisecond
	env := newTestEnv(t, func(c *Config) { c.StaleAfter = stale }, 20*time.Millisecond)
	dcid, scid := randomCID(t, 8), randomCID(t, 8)
	initial := clientInitial(t, dcid, scid)
	buf := make([]byte, 2048)

	// Filtering at first: a Retry comes back.
	env.send(t, initial)
	if !env.awaitRetry(t, initial, buf) {
		t.Fatal("no Retry before Pause")
	}

	env.dp.Pause()
	if !env.dp.Paused() {
		t.Fatal("Paused() = false after Pause")
	}
	// Initials the program hands the agent from now on reach it paused.
	toAgent := env.stats(t).XDP[xdp.AgentInitial]
	for start := time.Now(); ; time.Sleep(stale / 4) {
		before := env.stats(t).XDP[xdp.PassFailOpen]
		env.send(t, initial)
		if env.stats(t).XDP[xdp.PassFailOpen] > before {
			break
		}
		if time.Since(start) > hangGuard {
			t.Fatalf("the program never failed open (stats %+v)", env.stats(t))
		}
	}
	n, err := readUDP(env.server, buf)
	if err != nil || !bytes.Equal(buf[:n], initial) {
		t.Fatalf("kernel socket after fail-open: %d bytes, %v; want the Initial", n, err)
	}
	// The agent publishes its verdicts at its next flush: wait for them.
	if env.stats(t).XDP[xdp.AgentInitial] > toAgent {
		env.waitStats(t, "the paused agent to count what reached it", func(s Stats) bool { return s.Agent.Packets[agent.ReasonPaused] > 0 })
	}

	// Drain Retries still queued from before Pause, so the one awaited
	// below is new; the agent's count confirms it.
	for {
		if _, err := readUDP(env.client, buf); err != nil {
			break
		}
	}
	retries := env.stats(t).Agent.Packets[agent.ReasonRetry]
	env.dp.Resume()
	if !env.awaitRetry(t, initial, buf) {
		t.Fatalf("no Retry after Resume (stats %+v)", env.stats(t))
	}
	env.waitStats(t, "a Retry counted after Resume", func(s Stats) bool { return s.Agent.Packets[agent.ReasonRetry] > retries })
}

// awaitRetry sends pkt until the client receives a Retry (hang guard:
// hangGuard); the client socket's short read timeout paces the resends.
func (env *testEnv) awaitRetry(t *testing.T, pkt, buf []byte) bool {
	t.Helper()
	for start := time.Now(); time.Since(start) < hangGuard; {
		n, err := readUDP(env.client, buf)
		if err == nil && n > 0 && buf[0]&0xf0 == 0xf0 {
			return true
		}
		env.send(t, pkt)
	}
	return false
}

// TestCloseLeavesNothing checks that Close stops every goroutine, detaches
// the program, and that the test's namespaces go away.
func TestCloseLeavesNothing(t *testing.T) {
	requireRoot(t)
	before := runtime.NumGoroutine()
	nt := newTestNet(t, 0) // the kernel default: Start finds the queue count
	var dp *Datapath
	nt.in(t, nt.nsS, func() {
		var err error
		dp, err = Start(Config{Iface: ifS, Port: portS, KeyRing: testKeyRing(t), Deliver: func([]byte, netip.AddrPort, netip.AddrPort) {}})
		if loadRefused(err) {
			t.Skipf("skipping: the kernel refuses the datapath here: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	if out, _ := exec.Command("ip", "-n", nt.nsS, "link", "show", ifS).CombinedOutput(); !strings.Contains(string(out), "xdp") {
		t.Errorf("program not attached after Start:\n%s", out)
	}
	if err := dp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dp.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if out, _ := exec.Command("ip", "-n", nt.nsS, "link", "show", ifS).CombinedOutput(); strings.Contains(string(out), "xdp") {
		t.Errorf("program still attached after Close:\n%s", out)
	}
	for start := time.Now(); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > hangGuard {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
	}
	nt.destroy()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{nt.nsC, nt.nsS} {
		if strings.Contains(string(out), ns) {
			t.Errorf("namespace %s still exists", ns)
		}
	}
}

// TestStartErrors checks the errors a misconfigured or impossible Start
// returns.
func TestStartErrors(t *testing.T) {
	kr := testKeyRing(t)
	deliver := func([]byte, netip.AddrPort, netip.AddrPort) {}
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"no interface name", Config{Port: 1, KeyRing: kr, Deliver: deliver}, ErrConfig},
		{"no port", Config{Iface: "lo", KeyRing: kr, Deliver: deliver}, ErrConfig},
		{"no key ring", Config{Iface: "lo", Port: 1, Deliver: deliver}, ErrConfig},
		{"no deliver", Config{Iface: "lo", Port: 1, KeyRing: kr}, ErrConfig},
		{"deliver and forward", Config{Iface: "lo", Port: 1, KeyRing: kr, Deliver: deliver, Forward: func([]byte) {}}, ErrConfig},
		{"bad CID length", Config{Iface: "lo", Port: 1, KeyRing: kr, Deliver: deliver, CIDLen: 21}, ErrConfig},
		{"negative queues", Config{Iface: "lo", Port: 1, KeyRing: kr, Deliver: deliver, Queues: -1}, ErrConfig},
		{"heartbeat slower than stale", Config{Iface: "lo", Port: 1, KeyRing: kr, Deliver: deliver, StaleAfter: time.Second, HeartbeatInterval: time.Second}, ErrConfig},
		{"missing interface", Config{Iface: "trdp-none0", Port: 1, KeyRing: kr, Deliver: deliver}, ErrNoInterface},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp, err := Start(tc.cfg)
			if !errors.Is(err, tc.want) {
				if dp != nil {
					_ = dp.Close()
				}
				t.Fatalf("Start: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestObserveEgressAdmits: a server Handshake packet shown to ObserveEgress
// admits its SCID, so the client's short-header packets to it pass the fast
// path to the kernel socket; a malformed datagram admits nothing.
func TestObserveEgressAdmits(t *testing.T) {
	env := newTestEnv(t, nil, hangGuard)
	hostCID := randomCID(t, 8)
	h := wire.LongHeader{Type: wire.PacketTypeHandshake, Version: wire.Version1, DestConnID: randomCID(t, 8), SrcConnID: hostCID}
	pkt := wire.AppendLongHeader(nil, &h, 4, 2)
	lenOff, pnOff := len(pkt)-2, len(pkt)
	pkt = append(pkt, make([]byte, 4+40)...) // packet number and payload
	wire.PutVarintWithLen(pkt[lenOff:], uint64(len(pkt)-pnOff), 2)
	if env.dp.ObserveEgress([]byte{0xc0, 0, 0}) {
		t.Fatal("ObserveEgress admitted a connection ID from a truncated packet")
	}
	if !env.dp.ObserveEgress(pkt) {
		t.Fatal("ObserveEgress did not admit the Handshake packet's SCID")
	}
	known := shortHeader(hostCID, 0x77)
	env.send(t, known)
	buf := make([]byte, 2048)
	n, err := readUDP(env.server, buf)
	if err != nil || !bytes.Equal(buf[:n], known) {
		t.Fatalf("kernel socket: %d bytes, %v; want the packet to the admitted CID", n, err)
	}
	if s := env.stats(t); s.Agent.EgressLearned != 1 || s.Agent.EgressIgnored != 1 {
		t.Errorf("egress counters learned %d ignored %d; want 1, 1", s.Agent.EgressLearned, s.Agent.EgressIgnored)
	}
}

// TestMultiQueue: on a veth of 4 queues the datapath opens one socket
// and one worker per queue, and 64 flows (which the client's kernel
// spreads over its 4 TX queues, and veth maps TX queue i to RX queue i)
// each get their Retry, with every queue's worker answering some of them.
func TestMultiQueue(t *testing.T) {
	const queues, flows = 4, 64
	env := newTestEnvQueues(t, queues, nil, hangGuard)
	if env.dp.Queues() != queues {
		t.Fatalf("Queues() = %d, want %d", env.dp.Queues(), queues)
	}
	clients := make([]int, flows)
	env.in(t, env.nsC, func() {
		for i := range clients {
			clients[i] = udpSocket(t, netip.AddrPortFrom(ipC, uint16(51000+i)), serverAP, hangGuard)
		}
	})
	buf := make([]byte, 2048)
	for i, fd := range clients {
		dcid, scid := randomCID(t, 8), randomCID(t, 8)
		if _, err := unix.Write(fd, clientInitial(t, dcid, scid)); err != nil {
			t.Fatal(err)
		}
		n, err := readUDP(fd, buf)
		if err != nil {
			t.Fatalf("flow %d: no Retry: %v (stats %+v)", i, err, env.stats(t))
		}
		var h wire.LongHeader
		if err := wire.ParseLongHeader(buf[:n], &h); err != nil || h.Type != wire.PacketTypeRetry {
			t.Fatalf("flow %d: reply is not a Retry (%v)", i, err)
		}
		if err := handshake.VerifyRetryIntegrityTag(buf[:n], handshake.Version1, dcid); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	// A worker counts a frame after its Retry is written, so the client
	// may read the last Retry before the count: wait for the totals.
	total := env.waitStats(t, "every flow counted", func(s Stats) bool { return s.FramesRX >= flows && s.FramesTX >= flows })
	for i, q := range env.dp.queues {
		r, s := q.counters.framesRX.Load(), q.counters.framesTX.Load()
		t.Logf("queue %d: %d frames received, %d Retries sent", i, r, s)
		// 64 flows missing one of 4 queues: 4 * (3/4)^64, about 4e-8.
		if r == 0 || s == 0 {
			t.Errorf("queue %d handled nothing: the flows did not spread over the queues", i)
		}
	}
	if total.FramesRX != flows || total.FramesTX != flows {
		t.Errorf("queues received %d and sent %d frames, want %d each", total.FramesRX, total.FramesTX, flows)
	}
}

// TestRunStopsWithContext: Run starts the datapath and closes it when its
// context ends.
func TestRunStopsWithContext(t *testing.T) {
	nt := newTestNet(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	nt.in(t, nt.nsS, func() {
		err := Run(ctx, Config{Iface: ifS, Port: portS, KeyRing: testKeyRing(t), Deliver: func([]byte, netip.AddrPort, netip.AddrPort) {}})
		if loadRefused(err) {
			t.Skipf("skipping: the kernel refuses the datapath here: %v", err)
		}
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
	if out, _ := exec.Command("ip", "-n", nt.nsS, "link", "show", ifS).CombinedOutput(); strings.Contains(string(out), "xdp") {
		t.Errorf("program still attached after Run returned:\n%s", out)
	}
}
