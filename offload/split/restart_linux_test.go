package split

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/turboretry/turboretry/internal/testcert"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// The restart test needs the agent process's counters, so its agent child
// is a helper test (selected with -test.run) that answers queries on stdin
// instead of TestMain's silent child.
const (
	restartChildEnv = "TURBORETRY_SPLIT_RESTART_AGENT_SECRET" // hex root secret
	reannounceEvery = 200 * time.Millisecond
)

// TestSplitRestartAgentChild is not a test on its own: TestSplitAgentRestart
// runs the test binary in the dpu namespace with it selected. It starts the
// agent, prints childReadyLine and answers one line per command on stdin:
// "stats" with "stats " and the agent's Stats as JSON, "admitted HEX" with
// "admitted true" or "admitted false". It stops the agent when stdin closes.
func TestSplitRestartAgentChild(t *testing.T) {
	secret := os.Getenv(restartChildEnv)
	if secret == "" {
		t.Skip("helper process of TestSplitAgentRestart")
	}
	root, err := hex.DecodeString(secret)
	if err != nil {
		t.Fatal(err)
	}
	kr := testutil.KeyRing(t, root)
	a, err := Start(agentConfig(kr))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fmt.Println(childReadyLine)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "stats":
			s, err := a.Stats()
			if err != nil {
				fmt.Println("error", err)
				continue
			}
			b, err := json.Marshal(s)
			if err != nil {
				fmt.Println("error", err)
				continue
			}
			fmt.Printf("stats %s\n", b)
		case "admitted":
			cid, err := hex.DecodeString(arg)
			if err != nil {
				fmt.Println("error", err)
				continue
			}
			fmt.Println("admitted", a.Admitted(cid))
		default:
			fmt.Println("error unknown command", cmd)
		}
	}
}

// lockedBuffer collects a child's stderr for failure messages.
type lockedBuffer = testutil.SyncBuffer

// agentProc is an agent process started from TestSplitRestartAgentChild.
type agentProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line; closed at EOF
	stderr *lockedBuffer
	other  []string // stdout lines that answered nothing (the test framework's)
}

// startAgentProc starts the queryable agent process in the dpu namespace
// and waits until it runs; Cleanup stops it. Right after a SIGKILL the
// kernel may still hold the dead agent's AF_XDP socket on a queue ("queue
// busy"); like a supervisor, it starts the process again then (hang guard)
// and returns how many starts failed so.
func startAgentProc(tb testing.TB, e *emulation, root []byte) (*agentProc, int) {
	tb.Helper()
	for busy, start := 0, time.Now(); ; busy++ {
		p := spawnAgentProc(tb, e, root)
		ok, transcript := p.ready()
		if ok {
			return p, busy
		}
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if !strings.Contains(transcript, "queue busy") || time.Since(start) > hangGuard {
			tb.Fatalf("the agent process did not get ready (%d earlier starts found a queue busy): %s", busy, transcript)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// spawnAgentProc starts the process; Cleanup stops it.
func spawnAgentProc(tb testing.TB, e *emulation, root []byte) *agentProc {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	p := &agentProc{lines: make(chan string, 64), stderr: &lockedBuffer{}}
	p.cmd = exec.Command("ip", "netns", "exec", e.dpu, exe, "-test.run=^TestSplitRestartAgentChild$", "-test.count=1", "-test.v")
	p.cmd.Env = append(os.Environ(), restartChildEnv+"="+hex.EncodeToString(root))
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	tb.Cleanup(func() {
		_ = p.stdin.Close()
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	return p
}

// ready waits for the ready line (hang guard); without it, it returns what
// the process printed.
func (p *agentProc) ready() (bool, string) {
	timeout := time.After(hangGuard)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return false, strings.Join(p.other, "\n") + p.stderr.String()
			}
			if line == childReadyLine {
				return true, ""
			}
			p.other = append(p.other, line)
		case <-timeout:
			return false, strings.Join(p.other, "\n") + p.stderr.String()
		}
	}
}

// await reads stdout until a line starting with prefix (hang guard).
func (p *agentProc) await(tb testing.TB, prefix string) string {
	tb.Helper()
	timeout := time.After(hangGuard)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				tb.Fatalf("the agent process ended while waiting for %q: %s%s", prefix, strings.Join(p.other, "\n"), p.stderr.String())
			}
			if strings.HasPrefix(line, "error") {
				tb.Fatalf("agent process: %s", line)
			}
			if strings.HasPrefix(line, prefix) {
				return strings.TrimPrefix(line, prefix)
			}
			p.other = append(p.other, line)
		case <-timeout:
			tb.Fatalf("the agent process did not answer %q: %s%s", prefix, strings.Join(p.other, "\n"), p.stderr.String())
		}
	}
}

// query sends one command and returns the answer after prefix.
func (p *agentProc) query(tb testing.TB, cmd, prefix string) string {
	tb.Helper()
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		tb.Fatalf("agent process: %v", err)
	}
	return p.await(tb, prefix)
}

func (p *agentProc) stats(tb testing.TB) Stats {
	tb.Helper()
	var s Stats
	if err := json.Unmarshal([]byte(p.query(tb, "stats", "stats ")), &s); err != nil {
		tb.Fatalf("agent stats: %v", err)
	}
	return s
}

func (p *agentProc) admitted(tb testing.TB, cid []byte) bool {
	tb.Helper()
	return p.query(tb, "admitted "+hex.EncodeToString(cid), "admitted ") == "true"
}

// kill sends SIGKILL and waits until the kernel removed the XDP program.
func (p *agentProc) kill(tb testing.TB, e *emulation) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		tb.Fatalf("agent process: %v; want killed", err)
	}
	testutil.WaitFor(tb, "the kernel to remove the XDP program from p0", func() bool { return !e.xdpAttached(tb) })
}

// startReannouncingHost is startHost with a short re-announce interval, so
// a restarted agent learns the active connection IDs back quickly.
func startReannouncingHost(tb testing.TB, e *emulation, root []byte, kr *token.KeyRing) *hostServer {
	tb.Helper()
	return startHostEvery(tb, e, root, kr, reannounceEvery)
}

// live returns the connection IDs the host routes now.
func (h *hostServer) live() map[string]bool {
	m := map[string]bool{}
	h.tr.ConnectionIDs(func(cid []byte) bool {
		m[string(cid)] = true
		return true
	})
	return m
}

// dialEcho is echo with a client configuration of the caller's (a token
// store): it dials from the client namespace, echoes msg and returns the
// open connection.
func dialEcho(tb testing.TB, e *emulation, conf *quic.Config, msg string) *quic.Conn {
	tb.Helper()
	var udp *net.UDPConn
	in(tb, e.client, func() error {
		var err error
		udp, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ipClient, 0)))
		return err
	})
	tb.Cleanup(func() { udp.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	conf.HandshakeIdleTimeout = hangGuard
	conf.MaxIdleTimeout = 30 * time.Second
	c, err := quic.Dial(ctx, udp, net.UDPAddrFromAddrPort(serverAP),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{testALPN}}, conf)
	if err != nil {
		tb.Fatalf("dial (%s): %v", msg, err)
	}
	tb.Cleanup(func() { _ = c.CloseWithError(0, "") })
	echoOn(tb, c, msg)
	return c
}

// watchedStore is a token store that signals each NEW_TOKEN token it gets.
type watchedStore struct {
	quic.TokenStore
	put chan struct{}
}

func (s *watchedStore) Put(key string, tok *quic.ClientToken) {
	s.TokenStore.Put(key, tok)
	select {
	case s.put <- struct{}{}:
	default:
	}
}

// TestSplitAgentRestart: the agent process is killed and restarted with
// the same secret and an empty cache while the host (Retry always,
// re-announcing every 200 ms) keeps serving:
//   - connection A goes through the first agent (its Retry, no host Retry);
//   - after SIGKILL connection B gets the host's own Retry and a NEW_TOKEN
//     token from the host;
//   - the restarted agent learns A's and B's connection IDs from the
//     periodic re-announce (its control listener counts IDs, A's live IDs
//     are admitted) and both connections echo again through it;
//   - a client presenting the host's NEW_TOKEN token is forwarded by the
//     restarted agent ("new_token forwarded") with no Retry from anyone;
//   - a token-less client gets the restarted agent's Retry.
func TestSplitAgentRestart(t *testing.T) {
	e := newEmulation(t)
	kr, root := testKeyRing(t)
	h := startReannouncingHost(t, e, root, kr)
	first, _ := startAgentProc(t, e, root)
	if !e.xdpAttached(t) {
		t.Fatal("no XDP program on p0 while the agent process runs")
	}

	// Connection A through the first agent.
	n := len(h.announced())
	connA := dialEcho(t, e, &quic.Config{}, "A through the first agent")
	cidsA := h.announced()[n:]
	// The agent publishes its verdicts at its next flush, which can come
	// after the echo.
	s := waitStats(t, "the first agent's Retry count", func() Stats { return first.stats(t) }, func(s Stats) bool {
		return s.Datapath.Agent.Packets[agent.ReasonRetry] >= 1
	})
	if av := h.tr.AddressValidationStats(); av.RetriesSent != 0 || av.TokensAccepted["agent/retry"] != 1 {
		t.Fatalf("host after A: %d Retries, tokens %v; want only the agent's Retry", av.RetriesSent, av.TokensAccepted)
	}
	if s.Datapath.Agent.Packets[agent.ReasonRetry] < 1 {
		t.Fatalf("first agent's verdicts %v; want its Retry", s.Datapath.Agent.Packets)
	}

	// Agent gone: B gets the host's Retry and a NEW_TOKEN token.
	first.kill(t, e)
	store := &watchedStore{TokenStore: quic.NewLRUTokenStore(4, 4), put: make(chan struct{}, 1)}
	n = len(h.announced())
	connB := dialEcho(t, e, &quic.Config{TokenStore: store}, "B through the host's Retry")
	cidsB := h.announced()[n:]
	select {
	case <-store.put:
	case <-time.After(hangGuard):
		t.Fatal("the host sent connection B no NEW_TOKEN token")
	}
	av := h.tr.AddressValidationStats()
	if av.RetriesSent < 1 || av.TokensAccepted["host/retry"] < 1 {
		t.Fatalf("host after the kill: %d Retries, tokens %v; want its own Retry to take over", av.RetriesSent, av.TokensAccepted)
	}
	hostRetries := av.RetriesSent

	// The restarted agent learns A's and B's IDs from the re-announce.
	second, busy := startAgentProc(t, e, root)
	t.Logf("the restarted agent found the host port's queue still busy %d times", busy)
	if !e.xdpAttached(t) {
		t.Fatal("no XDP program on p0 after the restart")
	}
	var liveA, liveB [][]byte
	live := h.live()
	for _, c := range cidsA {
		if live[string(c)] {
			liveA = append(liveA, c)
		}
	}
	for _, c := range cidsB {
		if live[string(c)] {
			liveB = append(liveB, c)
		}
	}
	if len(liveA) == 0 || len(liveB) == 0 {
		t.Fatalf("live IDs of A:%s, of B:%s; want some of each (announced A:%s B:%s)",
			fmtCIDs(liveA), fmtCIDs(liveB), fmtCIDs(cidsA), fmtCIDs(cidsB))
	}
	testutil.WaitFor(t, "the restarted agent to admit A's and B's live connection IDs", func() bool {
		for _, c := range append(append([][]byte(nil), liveA...), liveB...) {
			if !second.admitted(t, c) {
				return false
			}
		}
		return true
	})
	// The listener counts a message after inserting (admitting) its IDs.
	s = waitStats(t, "the restarted agent's control counters", func() Stats { return second.stats(t) },
		func(s Stats) bool { return s.Control.Messages >= 1 && s.Control.CIDs >= uint64(len(liveA)+len(liveB)) })
	if s.Control.Messages < 1 || s.Control.CIDs < uint64(len(liveA)+len(liveB)) {
		t.Errorf("restarted agent's control channel: %d messages, %d IDs; want at least %d IDs",
			s.Control.Messages, s.Control.CIDs, len(liveA)+len(liveB))
	}
	for r, c := range s.Control.Rejected {
		if c != 0 {
			t.Errorf("restarted agent's control channel rejected %d messages (%v)", c, announce.Reason(r))
		}
	}
	echoOn(t, connA, "A through the restarted agent")
	echoOn(t, connB, "B through the restarted agent")

	// (ii) The host's NEW_TOKEN token is forwarded, no Retry for it.
	before := second.stats(t).Datapath.Agent.Packets
	dialEcho(t, e, &quic.Config{TokenStore: store}, "C with the host's NEW_TOKEN token")
	testutil.WaitFor(t, "the restarted agent's new_token verdict", func() bool {
		return second.stats(t).Datapath.Agent.Packets[agent.ReasonNewTokenForwarded] > before[agent.ReasonNewTokenForwarded]
	})
	after := second.stats(t).Datapath.Agent.Packets
	if after[agent.ReasonRetry] != before[agent.ReasonRetry] || after[agent.ReasonRetryBadNewToken] != before[agent.ReasonRetryBadNewToken] {
		t.Errorf("the restarted agent sent a Retry to the client with a NEW_TOKEN token: verdicts %v, before %v", after, before)
	}
	av = h.tr.AddressValidationStats()
	if av.RetriesSent != hostRetries || av.TokensAccepted["host/new_token"] != 1 {
		t.Errorf("host after C: %d Retries (%d before), tokens %v; want the NEW_TOKEN token accepted without a Retry",
			av.RetriesSent, hostRetries, av.TokensAccepted)
	}

	// (iii) A token-less client gets the restarted agent's Retry.
	before = after
	dialEcho(t, e, &quic.Config{}, "D without a token")
	testutil.WaitFor(t, "the restarted agent's Retry", func() bool {
		p := second.stats(t).Datapath.Agent.Packets
		return p[agent.ReasonRetry] > before[agent.ReasonRetry] && p[agent.ReasonRetryTokenForwarded] > before[agent.ReasonRetryTokenForwarded]
	})
	av = h.tr.AddressValidationStats()
	if av.RetriesSent != hostRetries || av.TokensAccepted["agent/retry"] != 2 {
		t.Errorf("host after D: %d Retries (%d before), tokens %v; want the restarted agent's retry token accepted",
			av.RetriesSent, hostRetries, av.TokensAccepted)
	}
	// A frame counts in HostSent (or HostFailed) as it goes out of the host
	// port, and in Forwarded only when its batch ends: wait until they agree.
	s = waitStats(t, "the restarted agent's frame counts to settle", func() Stats { return second.stats(t) },
		func(s Stats) bool { return s.HostSent+s.HostFailed == s.Datapath.Forwarded })
	if s.HostFailed != 0 || s.HostSent != s.Datapath.Forwarded {
		t.Errorf("restarted agent: forwarded %d, host port sent %d failed %d", s.Datapath.Forwarded, s.HostSent, s.HostFailed)
	}
}

// TestReannounceSkipsClientChosenIDs: the re-announce (Transport.ConnectionIDs
// as AnnouncerConfig.Active) must hand the announcer only the host's own
// connection IDs, whole. A server keeps routing the DCID of the client's
// first Initial, which the client chose: quic-go picks 8 to 20 bytes. With
// such an ID among the routed ones, the IDs must still come out as the
// transport announced them, or a restarted agent learns wrong IDs and
// drops the live connections' packets.
func TestReannounceSkipsClientChosenIDs(t *testing.T) {
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var mu sync.Mutex
	added := map[string]bool{}
	odd := 0
	tr := &quic.Transport{Conn: udp, ConnectionIDLength: 8, ConnectionIDAdded: func(cid []byte) {
		mu.Lock()
		defer mu.Unlock()
		added[string(cid)] = true
		if len(cid) != 8 {
			odd++
		}
	}}
	defer tr.Close()
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{testcert.Certificate(t)}, NextProtos: []string{testALPN}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	go func() {
		for {
			if _, err := ln.Accept(ctx); err != nil {
				return
			}
		}
	}()
	// quic-go's Initial DCID is 8 bytes in one dial of 13: dial until one
	// is not.
	for i := 0; ; i++ {
		mu.Lock()
		n := odd
		mu.Unlock()
		if n > 0 {
			break
		}
		if i == 40 {
			t.Fatal("no quic-go client chose an Initial DCID other than 8 bytes in 40 dials")
		}
		c, err := quicgo.DialAddr(ctx, udp.LocalAddr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{testALPN}}, nil)
		if err != nil {
			t.Fatalf("quic-go dial: %v", err)
		}
		defer c.CloseWithError(0, "")
	}
	mu.Lock()
	defer mu.Unlock()
	tr.ConnectionIDs(func(cid []byte) bool {
		if !added[string(cid)] {
			t.Errorf("ConnectionIDs yielded %x, an ID the transport never routed (a client-chosen ID of another length shifted the rest)", cid)
		}
		if len(cid) != 8 {
			t.Errorf("ConnectionIDs yielded %x of %d bytes for the announcer of 8-byte IDs", cid, len(cid))
		}
		return true
	})
}
