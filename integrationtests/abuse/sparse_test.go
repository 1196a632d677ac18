//go:build linux

package abuse

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/quic"
)

// Issue 23's sparse-stream attack: each attacking connection sends one-byte
// STREAM frames 16 KiB apart over the flow-control window and never the
// byte at offset 0, so nothing is readable and everything stays buffered.
// With the default windows (512 KiB per stream, 768 KiB per connection)
// 49 such frames fit on two request streams: 32 at offsets 1, 1+16 KiB,
// ..., 1+31*16 KiB on the first, 17 on the second, final sizes summing to
// 752 KiB + 4.
const (
	sparseGap         = 16 << 10
	sparseFirstStream = 32 // frames on the first stream
	sparseFrames      = 49 // per connection
)

// sparseAttackFrames returns the attack's STREAM frames for request
// streams first and second, and the final size each stream has after
// them (its highest offset plus one).
func sparseAttackFrames(first, second uint64) (frames []byte, finalSizes map[uint64]uint64) {
	finalSizes = map[uint64]uint64{}
	for i := range sparseFrames {
		id, k := first, i
		if i >= sparseFirstStream {
			id, k = second, i-sparseFirstStream
		}
		offset := 1 + uint64(k)*sparseGap
		frames = wire.AppendStreamFrame(frames, id, offset, []byte{0xAA}, false, true)
		finalSizes[id] = offset + 1
	}
	return frames, finalSizes
}

// sparseTap is an attacker's socket under one of our client connections.
// It passes datagrams through and learns the length of the server's
// connection IDs from its long headers. Once armed with the client's
// 1-RTT secret (from the TLS key log) it rewrites every 1-RTT packet the
// client sends: the client's STREAM frames of the attacked streams are
// dropped, so their offset 0 never leaves, and the first packet also
// carries the attack's frames. When the client resets an attacked stream
// (after the server stopped it), its RESET_STREAM is given the final size
// the attack set: the client's own would be below the data the server
// received, which the server must close the connection for. Each packet
// keeps the client's packet number, so the server's acknowledgments are
// of packets the client sent. The client's own state knows nothing of the
// attack.
type sparseTap struct {
	pc     *net.UDPConn
	keyLog testutil.SyncBuffer
	cidLen atomic.Int32 // of the server's connection IDs; -1 until seen

	mu       sync.Mutex
	opener   *handshake.Opener // the client's 1-RTT keys: to read its packets
	sealer   *handshake.Sealer // and to protect them again
	largest  int64             // the client's largest 1-RTT packet number seen
	attacked map[uint64]uint64 // streams whose frames are rewritten: their final size
	frames   []byte            // the attack, until sent
	err      error             // the first rewrite that failed
	sent     chan struct{}     // closed once the attack left, or failed
}

func newSparseTap() (*sparseTap, error) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	a := &sparseTap{pc: pc, largest: -1, sent: make(chan struct{})}
	a.cidLen.Store(-1)
	return a, nil
}

// ReadFrom passes the server's datagrams on.
func (a *sparseTap) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := a.pc.ReadFrom(b)
	if n > 0 && wire.IsLongHeader(b[0]) && a.cidLen.Load() < 0 {
		var h wire.InvariantHeader
		if wire.ParseInvariantHeader(b[:n], &h) == nil {
			a.cidLen.Store(int32(len(h.SrcConnID)))
		}
	}
	return n, addr, err
}

// WriteTo sends the client's datagrams, rewritten once armed.
func (a *sparseTap) WriteTo(b []byte, addr net.Addr) (int, error) {
	a.mu.Lock()
	if a.opener == nil || a.err != nil {
		a.mu.Unlock()
		return a.pc.WriteTo(b, addr)
	}
	out, err := a.rewrite(b)
	if err != nil {
		a.err = err
		if a.frames != nil {
			a.frames = nil
			close(a.sent) // the test finds the error at once
		}
		a.mu.Unlock()
		return a.pc.WriteTo(b, addr)
	}
	a.mu.Unlock()
	if _, err := a.pc.WriteTo(out, addr); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (a *sparseTap) Close() error                       { return a.pc.Close() }
func (a *sparseTap) LocalAddr() net.Addr                { return a.pc.LocalAddr() }
func (a *sparseTap) SetDeadline(t time.Time) error      { return a.pc.SetDeadline(t) }
func (a *sparseTap) SetReadDeadline(t time.Time) error  { return a.pc.SetReadDeadline(t) }
func (a *sparseTap) SetWriteDeadline(t time.Time) error { return a.pc.SetWriteDeadline(t) }

// arm gives the tap c's 1-RTT keys, the attack and the final size it sets
// on each attacked stream.
func (a *sparseTap) arm(c *quic.Conn, frames []byte, finalSizes map[uint64]uint64) error {
	if a.cidLen.Load() < 0 {
		return errors.New("no long header from the server seen")
	}
	secret, err := keyLogSecret(a.keyLog.String(), "CLIENT_TRAFFIC_SECRET_0")
	if err != nil {
		return err
	}
	st := c.ConnectionState()
	v := handshake.Version(st.Version)
	opener, err := handshake.NewOpener(st.TLS.CipherSuite, secret, v)
	if err != nil {
		return err
	}
	sealer, err := handshake.NewSealer(st.TLS.CipherSuite, secret, v)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.opener, a.sealer, a.attacked, a.frames = opener, sealer, finalSizes, frames
	return nil
}

// failed returns the first error rewriting a packet.
func (a *sparseTap) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// sparseMaxDatagram bounds a rewritten datagram: the attack waits for a
// packet it fits in.
const sparseMaxDatagram = 1200

// rewrite returns datagram with its 1-RTT packet rewritten (long header
// packets coalesced before it stay as they are). Called with a.mu held.
func (a *sparseTap) rewrite(datagram []byte) ([]byte, error) {
	cidLen := int(a.cidLen.Load())
	out := make([]byte, 0, len(datagram)+len(a.frames)+64)
	for pkt, err := range coalesced.Packets(datagram) {
		if err != nil {
			return nil, err
		}
		if wire.IsLongHeader(pkt[0]) {
			out = append(out, pkt...)
			continue
		}
		spin := pkt[0]&0x20 != 0
		plain := slices.Clone(pkt)
		payload, pn, err := a.opener.UnprotectPacket(plain, 1+cidLen, a.largest)
		if err != nil {
			return nil, fmt.Errorf("reading the client's 1-RTT packet: %w", err)
		}
		a.largest = max(a.largest, int64(pn))
		if plain[0]&handshake.KeyPhaseBit != 0 {
			return nil, errors.New("the client updated its keys")
		}
		body, err := a.keep(payload)
		if err != nil {
			return nil, err
		}
		const pnLen = 4 // decodes at the server whatever it received last
		hdrLen := 1 + cidLen + pnLen
		if a.frames != nil && len(out)+hdrLen+len(body)+len(a.frames)+a.sealer.Overhead() <= sparseMaxDatagram {
			body = append(body, a.frames...)
			a.frames = nil
			close(a.sent)
		}
		if len(body) == 0 {
			body = append(body, 0x01) // a PING: a packet needs a frame
		}
		p := wire.AppendShortHeader(nil, plain[1:1+cidLen], pnLen, false, spin)
		p = wire.AppendPacketNumber(p, pn, pnLen)
		p = append(p, body...)
		if p, err = a.sealer.ProtectPacket(p, 1+cidLen, pnLen, pn); err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

// keep returns payload's frames but the STREAM frames of attacked
// streams, with the attack's final size in their RESET_STREAM frames.
func (a *sparseTap) keep(payload []byte) ([]byte, error) {
	var kept []byte
	var f wire.Frame
	for len(payload) > 0 {
		n, err := wire.ParseFrame(payload, &f)
		if err != nil {
			return nil, fmt.Errorf("parsing the client's frames: %w", err)
		}
		finalSize, attacked := a.attacked[f.StreamID]
		switch {
		case attacked && f.Type == wire.FrameTypeStream:
		case attacked && (f.Type == wire.FrameTypeResetStream || f.Type == wire.FrameTypeResetStreamAt):
			f.FinalSize, f.ReliableSize = finalSize, 0
			kept = wire.AppendFrame(kept, &f)
		default:
			kept = append(kept, payload[:n]...)
		}
		payload = payload[n:]
	}
	return kept, nil
}

// keyLogSecret returns the secret of a TLS key log with the given label.
func keyLogSecret(log, label string) ([]byte, error) {
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == label {
			return hex.DecodeString(f[2])
		}
	}
	return nil, fmt.Errorf("no %s in the key log", label)
}

// sparseAttacker is one attacking connection: our client over a tap, with
// two request streams opened (so that the server may reset them) and
// nothing sent on them but what the tap puts there.
type sparseAttacker struct {
	tap     *sparseTap
	tr      *quic.Transport
	conn    *quic.Conn
	streams [2]*quic.Stream
}

func dialSparseAttacker(ctx context.Context, s *server, raddr *net.UDPAddr) (*sparseAttacker, error) {
	tap, err := newSparseTap()
	if err != nil {
		return nil, err
	}
	a := &sparseAttacker{tap: tap, tr: &quic.Transport{Conn: tap}}
	tlsConf := s.clientTLS("h3")
	tlsConf.KeyLogWriter = &tap.keyLog
	// Keep-alives hold the connection past the server's idle timeout on
	// a slow machine.
	a.conn, err = a.tr.Dial(ctx, raddr, tlsConf, &quic.Config{KeepAlivePeriod: 10 * time.Second, HandshakeIdleTimeout: 30 * time.Second})
	if err != nil {
		a.close()
		return nil, err
	}
	for i := range a.streams {
		if a.streams[i], err = a.conn.OpenStream(); err != nil {
			a.close()
			return nil, err
		}
	}
	return a, nil
}

// attack arms the tap and makes the client send a packet for it to
// rewrite: one byte on the first stream, which the tap drops.
func (a *sparseAttacker) attack() error {
	frames, finalSizes := sparseAttackFrames(uint64(a.streams[0].StreamID()), uint64(a.streams[1].StreamID()))
	if err := a.tap.arm(a.conn, frames, finalSizes); err != nil {
		return err
	}
	_, err := a.streams[0].Write([]byte{0})
	return err
}

func (a *sparseAttacker) close() {
	if a.conn != nil {
		a.conn.CloseWithError(0, "")
	}
	a.tr.Close()
	a.tap.Close()
}

// Metrics of the server's memory (Go's runtime collector and quic's
// receive accounting).
const (
	mHeapAlloc     = "go_memstats_heap_alloc_bytes"
	mHeapInuse     = "go_memstats_heap_inuse_bytes"
	mRecvBuffered  = "turboretry_quic_receive_buffered_bytes"
	mRecvOOO       = "turboretry_quic_receive_out_of_order_bytes"
	mClosedByLimit = "turboretry_quic_closed_by_limit_total"
	mH3Requests    = "turboretry_http3_requests_total"
)

// TestSparseStreams is issue 23's sparse-stream attack against the real
// server: N connections (1200, or TURBORETRY_SPARSE_CONNS) each put 49
// one-byte STREAM frames 16 KiB apart over the flow-control window of two
// request streams, offset 0 never sent. Each attacking connection may cost
// the server under 40 KiB of resident memory beyond what it cost idle,
// the server's RSS may not have passed 150 MB (its high-water mark, VmHWM,
// once the attack is buffered), no attacking connection may be closed
// for it (the bound holds by what the server holds, not by refusing), a
// benign download completes with quic-go's client and ours during the
// attack, the header timeout's resets free the buffered data, and once
// the attackers close, the server's heap comes back within 16 MiB of
// where it started within 30 s.
//
// Memory is the server's, a child process: RSS from /proc/PID/status, the
// heap from its /metrics (Go's runtime metrics: what the heap holds now,
// garbage since the last collection included; nothing from outside makes
// the server collect, so benign downloads go on until it did).
// docs/abuse.md has the figures.
func TestSparseStreams(t *testing.T) {
	n := 1200
	if v := os.Getenv("TURBORETRY_SPARSE_CONNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 || n > 4000 {
			t.Fatalf("TURBORETRY_SPARSE_CONNS=%q: want 1 to 4000 (the server's connection cap is 4096)", v)
		}
	}
	const (
		dialers         = 16
		maxPerConnKiB   = 40
		maxRSSMB        = 150
		heapSlackMiB    = 16
		heapBackWithin  = 30 * time.Second
		benignFile      = "download.bin"
		benignFileBytes = 1 << 20
	)
	root := t.TempDir()
	download := make([]byte, benignFileBytes)
	rand.Read(download)
	if err := os.WriteFile(filepath.Join(root, benignFile), download, 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--root", root)
	ctx := ctxFor(t)
	raddr, err := net.ResolveUDPAddr("udp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	start := s.scrape()
	startRSS := s.rssMB()

	// The attackers connect and sit idle.
	attackers := make([]*sparseAttacker, 0, n)
	t.Cleanup(func() {
		for _, a := range attackers {
			a.close()
		}
	})
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	dialStart := time.Now()
	for range dialers {
		wg.Go(func() {
			for range work {
				a, err := dialSparseAttacker(ctx, s, raddr)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					attackers = append(attackers, a)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d attackers failed to connect: %v", len(errs), n, errs[0])
	}
	pollMetrics(t, s, "the server to hold every attacking connection", func(m map[string]float64) bool {
		return m[mConns] == float64(n) && m["turboretry_quic_transport_handshaking"] == 0
	})
	// Let the handshakes' leftovers (tickets, acknowledgments) settle.
	waitQuiet(t, s)
	idle := s.scrape()
	idleRSS := s.rssMB()
	t.Logf("%d attacking connections up in %v: server RSS %.1f MB (%.1f at start), heap %.1f MiB in use (%.1f at start)",
		n, time.Since(dialStart).Round(time.Millisecond), idleRSS, startRSS, mib(idle[mHeapInuse]), mib(start[mHeapInuse]))

	// The attack.
	attackStart := time.Now()
	for _, a := range attackers {
		if err := a.attack(); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range attackers {
		select {
		case <-a.tap.sent:
		case <-ctx.Done():
			t.Fatal("an attacker's tap never sent the attack")
		}
		if err := a.tap.failed(); err != nil {
			t.Fatalf("an attacker's tap failed: %v", err)
		}
	}
	// The server holds the attack once it accepted both streams of every
	// connection: the frames that opened them were buffered before.
	attacked := pollMetrics(t, s, "the server to accept the attacked streams", func(m map[string]float64) bool {
		return m[mH3Requests]-idle[mH3Requests] >= float64(2*n)
	})
	attackedRSS, attackedPeak := s.rssMB(), s.peakRSSMB()
	perConnKiB := (attackedRSS - idleRSS) * 1024 / float64(n)
	t.Logf("attack buffered after %v: RSS %.1f MB (+%.1f KiB per attacking connection), heap %.1f MiB in use (+%.1f KiB per connection); receive buffers %.1f KiB per connection, %.1f KiB of it out of order",
		time.Since(attackStart).Round(time.Millisecond), attackedRSS, perConnKiB, mib(attacked[mHeapInuse]),
		(attacked[mHeapInuse]-idle[mHeapInuse])/1024/float64(n), attacked[mRecvBuffered]/1024/float64(n), attacked[mRecvOOO]/1024/float64(n))

	// A benign download during the attack, with quic-go's client and ours.
	checkBenign(t, benignFetches(ctx, s, benignFile, download))

	during := s.scrape()
	if during[mClosedByLimit] != 0 {
		t.Errorf("the server closed %.0f connections for their receive memory: the attack should fit its limits", during[mClosedByLimit])
	}
	if during[mConns] < float64(n) {
		t.Errorf("the server holds %.0f connections during the attack, want the %d attackers", during[mConns], n)
	}
	for _, a := range attackers {
		if err := context.Cause(a.conn.Context()); err != nil {
			t.Fatalf("an attacking connection closed during the attack: %v", err)
		}
		if err := a.tap.failed(); err != nil {
			t.Fatalf("an attacker's tap failed: %v", err)
		}
	}
	if perConnKiB >= maxPerConnKiB {
		t.Errorf("each attacking connection costs the server %.1f KiB of RSS beyond an idle one, want < %d KiB", perConnKiB, maxPerConnKiB)
	}
	if attackedPeak >= maxRSSMB {
		t.Errorf("the server's peak RSS was %.1f MB once %d connections attacked, want < %d MB", attackedPeak, n, maxRSSMB)
	}
	if attacked[mRecvOOO] < float64(n*sparseFrames) {
		t.Errorf("the server counts %.0f bytes of out-of-order receive data, want at least the attack's %d", attacked[mRecvOOO], n*sparseFrames)
	}

	// The header timeout (10 s) resets the request streams, which frees
	// what they buffered.
	reset := pollMetrics(t, s, "the header timeout to free the attack's buffers", func(m map[string]float64) bool {
		return m[mRecvOOO] == 0 && m[mRecvBuffered] == 0
	})
	t.Logf("after the streams were reset (%v after the attack): RSS %.1f MB, heap %.1f MiB in use, %.0f request streams refused for the header timeout",
		time.Since(attackStart).Round(time.Millisecond), s.rssMB(), mib(reset[mHeapInuse]), reset[series(mH3Refused, "reason", "header_timeout")])

	// The attackers close; the heap comes back near its start.
	for _, a := range attackers {
		a.close()
	}
	attackers = nil
	closed := time.Now()
	pollMetrics(t, s, "the server to release the attacking connections", func(m map[string]float64) bool { return m[mConns] == 0 })
	released := time.Since(closed)
	// The server collects its garbage as it allocates, and a server
	// allocates as it serves: benign downloads go on, each on a new
	// connection, until the heap is back or the time is up (a few seconds
	// and some 50 downloads on the loaded 2-core development VM).
	var (
		last    map[string]float64
		fetches int
	)
	for {
		last = s.scrape()
		if last[mHeapAlloc] <= start[mHeapAlloc]+heapSlackMiB<<20 || time.Since(closed) > heapBackWithin {
			break
		}
		// Two downloads with each client at once: a loaded machine
		// makes each one slow.
		results := make(chan error, 2*len(benignClients))
		for i := range cap(results) {
			go func() { results <- benignFetch(ctx, s, i%len(benignClients), benignFile, download) }()
		}
		for range cap(results) {
			if err := <-results; err != nil {
				t.Errorf("benign download after the attack: %v", err)
			}
			fetches++
		}
	}
	peakRSS := s.peakRSSMB()
	t.Logf("after close: connections released in %v, heap %.1f MiB allocated (%.1f at start, %.1f with the attack) after %v and %d benign downloads; RSS %.1f MB, peak %.1f MB (%.1f MB once attacked)",
		released.Round(time.Millisecond), mib(last[mHeapAlloc]), mib(start[mHeapAlloc]), mib(attacked[mHeapAlloc]),
		time.Since(closed).Round(time.Millisecond), fetches, s.rssMB(), peakRSS, attackedPeak)
	if last[mHeapAlloc] > start[mHeapAlloc]+heapSlackMiB<<20 {
		t.Errorf("%v after the attackers closed the server's heap is %.1f MiB, want within %d MiB of its %.1f MiB at start",
			heapBackWithin, mib(last[mHeapAlloc]), heapSlackMiB, mib(start[mHeapAlloc]))
	}
	checkNoPanics(t, last)
}

// pollMetrics scrapes the server's metrics every 100 ms (a scrape costs
// the server CPU and garbage) until cond holds of them, and returns them.
// The minute is a hang guard.
func pollMetrics(t *testing.T, s *server, what string, cond func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		m := s.scrape()
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func mib(v float64) float64 { return v / (1 << 20) }
