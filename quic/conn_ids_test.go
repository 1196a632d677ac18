package quic

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// cidSnapshot is what a connection holds of connection IDs, read under its
// mutex.
type cidSnapshot struct {
	remoteActive int  // the peer's IDs we hold
	localActive  int  // our IDs the peer may use
	seq0Routed   bool // our handshake ID is still routed (not retired)
	destIsSeq0   bool // we still send with the peer's handshake ID
}

func snapshotCIDs(c *Conn, handshakeDest []byte) cidSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s cidSnapshot
	if c.cids.remote != nil {
		s.remoteActive = c.cids.remote.ActiveCount()
	}
	s.localActive = c.cids.local.ActiveCount()
	_, s.seq0Routed = c.cids.own[string(c.cids.src)]
	s.destIsSeq0 = bytes.Equal(c.cids.dest, handshakeDest)
	return s
}

// waitCIDs polls until done holds; the context is only a hang guard.
func waitCIDs(t *testing.T, ctx context.Context, c *Conn, dest []byte, done func(cidSnapshot) bool) cidSnapshot {
	t.Helper()
	for {
		s := snapshotCIDs(c, dest)
		if done(s) {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("connection IDs never settled: %+v", s)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// quic-go switches to one of our new IDs as soon as the handshake completes
// and retires sequence 0, so both directions see RETIRE_CONNECTION_ID.
func settled(s cidSnapshot) bool {
	return s.remoteActive >= 2 && s.localActive == maxIssuedCIDs && !s.seq0Routed
}

func TestConnectionIDsQuicGoClientOurServer(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	added := map[string]bool{}
	srv := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8, ConnectionIDAdded: func(cid []byte) {
		mu.Lock()
		added[string(cid)] = true
		mu.Unlock()
	}}
	defer srv.Close()
	ln, err := srv.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		conns <- c
		for {
			s, err := c.AcceptStream(ctx)
			if err != nil {
				return
			}
			go func() {
				_, _ = io.Copy(s, s)
				_ = s.Close()
			}()
		}
	}()
	qt := &quicgo.Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	defer qt.Close()
	qc, err := qt.Dial(ctx, ln.Addr(), clientTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	sc := <-conns
	s, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(1<<20, 11))
	waitCIDs(t, ctx, sc, sc.cids.dest, settled)
	// The retired sequence 0 is no longer routed, and every ID we issued
	// (the client's first DCID, sequences 0 to 3 and the replacement of
	// sequence 0) reached ConnectionIDAdded.
	srv.mu.Lock()
	_, routed := srv.handlers[string(sc.cids.src)]
	srv.mu.Unlock()
	if routed {
		t.Fatal("retired handshake connection ID is still routed")
	}
	mu.Lock()
	n := len(added)
	mu.Unlock()
	if n < 2+maxIssuedCIDs {
		t.Fatalf("ConnectionIDAdded saw %d IDs, want at least %d", n, 2+maxIssuedCIDs)
	}
	// The transfer keeps working on the new IDs.
	s2, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s2, testData(100_000, 12))
}

func TestConnectionIDsOurClientQuicGoServer(t *testing.T) {
	ctx := testCtx(t)
	addr := quicgoEchoServer(t, ctx)
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	defer tr.Close()
	c, err := tr.Dial(ctx, ua, clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	c.mu.Lock()
	handshakeDest := bytes.Clone(c.cids.dest)
	c.mu.Unlock()
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, testData(1<<20, 13))
	waitCIDs(t, ctx, c, handshakeDest, settled)
	s2, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s2, testData(100_000, 14))
}

func TestConnectionIDsOursToOurs(t *testing.T) {
	ctx := testCtx(t)
	srv := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	defer srv.Close()
	ln, err := srv.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		conns <- c
	}()
	tr := &Transport{Conn: listenUDP(t), ConnectionIDLength: 8}
	defer tr.Close()
	c, err := tr.Dial(ctx, ln.Addr(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	sc := <-conns
	// Both sides hold the other's extra IDs; neither switches on its own.
	full := func(s cidSnapshot) bool {
		return s.remoteActive == remoteCIDLimit && s.localActive == maxIssuedCIDs
	}
	waitCIDs(t, ctx, c, nil, full)
	waitCIDs(t, ctx, sc, nil, full)
}

// offlineFrames parses what appendCIDFrames packs.
func offlineFrames(t *testing.T, c *Conn) ([]wire.Frame, *sentPacket) {
	t.Helper()
	p := &sentPacket{}
	b := c.appendCIDFrames(nil, 1200, p)
	var frames []wire.Frame
	for len(b) > 0 {
		var f wire.Frame
		n, err := wire.ParseFrame(b, &f)
		if err != nil {
			t.Fatal(err)
		}
		f.ConnectionID = bytes.Clone(f.ConnectionID)
		frames = append(frames, f)
		b = b[n:]
	}
	return frames, p
}

func TestConnectionIDFramesOffline(t *testing.T) {
	c := newOfflineConn(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	key := c.t.localResetKey()

	// We issue sequences 1..3 (the peer allows 4 active), tokens from the key.
	frames, p := offlineFrames(t, c)
	if len(frames) != maxIssuedCIDs-1 {
		t.Fatalf("%d NEW_CONNECTION_ID frames, want %d", len(frames), maxIssuedCIDs-1)
	}
	for i, f := range frames {
		id, _ := protocol.ParseConnectionID(f.ConnectionID)
		if f.Type != wire.FrameTypeNewConnectionID || f.SequenceNumber != uint64(i+1) || f.StatelessResetToken != connid.ResetTokenFor(key, id) {
			t.Fatalf("frame %d: %+v", i, f)
		}
		if !c.cids.owns(f.ConnectionID) {
			t.Fatalf("issued ID %x not routed", f.ConnectionID)
		}
	}
	// Their loss queues them again.
	c.loss.sent.add(1, p)
	c.onPacketLost(1, time.Now())
	if again, _ := offlineFrames(t, c); len(again) != len(frames) {
		t.Fatalf("%d frames after loss, want %d", len(again), len(frames))
	}

	// The peer retires sequence 1: it is unrouted and sequence 4 replaces it.
	if err := c.handleFrameBytes(retireCID(1)); err != nil {
		t.Fatal(err)
	}
	if c.cids.owns(frames[0].ConnectionID) {
		t.Fatal("retired ID still routed")
	}
	if repl, _ := offlineFrames(t, c); len(repl) != 1 || repl[0].SequenceNumber != 4 {
		t.Fatalf("replacement frames %+v", repl)
	}
	// Retiring the ID the packet was sent to is a protocol violation.
	c.cids.rxDCID = frames[1].ConnectionID
	err := c.handleFrameBytes(retireCID(2))
	c.cids.rxDCID = nil
	var te *qerr.TransportError
	if !errors.As(err, &te) || te.Code != qerr.ProtocolViolation {
		t.Fatalf("retiring the packet's own DCID: %v", err)
	}

	// The peer issues sequence 1 and retires sequence 0: we switch to the
	// new ID and owe RETIRE_CONNECTION_ID(0), sent again if lost.
	if err := c.handleFrameBytes(newCID(1, 1, 0xb1)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.cids.dest, bytes.Repeat([]byte{0xb1}, 8)) {
		t.Fatalf("destination ID %x after retire_prior_to", c.cids.dest)
	}
	frames, p = offlineFrames(t, c)
	if len(frames) != 1 || frames[0].Type != wire.FrameTypeRetireConnectionID || frames[0].SequenceNumber != 0 {
		t.Fatalf("frames %+v, want RETIRE_CONNECTION_ID 0", frames)
	}
	c.loss.sent.add(2, p)
	c.onPacketLost(2, time.Now())
	if again, _ := offlineFrames(t, c); len(again) != 1 || again[0].SequenceNumber != 0 {
		t.Fatalf("after loss: %+v", again)
	}
}

// handleFrameBytes parses and handles one frame as if it came in 1-RTT.
func (c *Conn) handleFrameBytes(b []byte) error {
	var f wire.Frame
	if _, err := wire.ParseFrame(b, &f); err != nil {
		return err
	}
	return c.handleFrame(spaceApp, &f, time.Now())
}

// TestStatelessResetTokenDerivation pins the token derivation, HMAC-SHA256
// of the ID truncated to 16 bytes, which connid.ResetTokenFor and the
// Transport's stateless resets share, and the server's transport
// parameter token.
func TestStatelessResetTokenDerivation(t *testing.T) {
	key := StatelessResetKey{1, 2, 3}
	cid := []byte{9, 8, 7, 6, 5, 4, 3, 2}
	m := hmac.New(sha256.New, key[:])
	m.Write(cid)
	if got := statelessResetToken(&key, cid); !bytes.Equal(got[:], m.Sum(nil)[:16]) {
		t.Fatal("token differs from HMAC-SHA256")
	}
	c := newOfflineConn(t)
	c.t.StatelessResetKey = &key
	c.cids.local = nil
	if err := c.cids.initLocal(c.t, c, &c.out, &c.path); err != nil {
		t.Fatal(err)
	}
	p := c.ourParams()
	if !p.HasStatelessResetToken || p.StatelessResetToken != statelessResetToken(&key, c.cids.src) {
		t.Fatal("transport parameter token is not the token of the handshake ID")
	}
}

// TestResetTokenRouting: the Transport routes only the reset token of the
// peer ID in use, so a peer issuing and retiring IDs forever cannot grow
// its table.
func TestResetTokenRouting(t *testing.T) {
	c := newOfflineConn(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	for seq := uint64(1); seq <= 50; seq++ {
		if err := c.handleFrameBytes(newCID(seq, seq, byte(seq))); err != nil {
			t.Fatal(err)
		}
		// Acknowledge the RETIRE_CONNECTION_ID frames so more may follow.
		_, p := offlineFrames(t, c)
		c.loss.sent.add(seq, p)
		c.onPacketAcked(seq)
	}
	var want [16]byte
	want[0] = 50
	c.t.mu.Lock()
	n, routed := len(c.t.resetTokens), c.t.resetTokens[want] == c
	c.t.mu.Unlock()
	if n != 1 || !routed {
		t.Fatalf("%d reset tokens routed (current one: %v), want only the current one", n, routed)
	}
}
