package quic

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
	"github.com/turboretry/turboretry/internal/wire"
)

// The frame-level connection harness: a test plays the peer of one real
// connection frame by frame, in virtual time (run it inside
// synctest.Test). The connection runs its own event loop on a Transport
// over a socket the harness owns; what the test writes is sealed with the
// peer's keys and handed to that socket, and what the connection sends is
// opened and parsed for the test to check. docs/testing.md, "Frame-level
// tests", shows how to write one.

// testSocket is the net.PacketConn under a harness connection: reads
// return what the test queued, writes are kept for the test.
type testSocket struct {
	local  net.Addr
	in     chan testDatagram
	stopCh chan struct{} // closed by Close or a read deadline
	stop   sync.Once

	mu  sync.Mutex
	out []testDatagram // to the address in from
}

type testDatagram struct {
	data []byte
	from net.Addr
}

func newTestSocket() *testSocket {
	return &testSocket{
		local:  &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 443},
		in:     make(chan testDatagram, 64),
		stopCh: make(chan struct{}),
	}
}

func (s *testSocket) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case d := <-s.in:
		return copy(b, d.data), d.from, nil
	case <-s.stopCh:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

func (s *testSocket) WriteTo(b []byte, to net.Addr) (int, error) {
	s.mu.Lock()
	s.out = append(s.out, testDatagram{data: slices.Clone(b), from: to})
	s.mu.Unlock()
	return len(b), nil
}

// takeWritten returns the datagrams written since the last call.
func (s *testSocket) takeWritten() []testDatagram {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.out
	s.out = nil
	return out
}

func (s *testSocket) Close() error {
	s.stop.Do(func() { close(s.stopCh) })
	return nil
}

func (s *testSocket) SetReadDeadline(d time.Time) error {
	// The Transport only sets one to end its read loop.
	if !d.IsZero() {
		s.stop.Do(func() { close(s.stopCh) })
	}
	return nil
}

func (s *testSocket) LocalAddr() net.Addr                { return s.local }
func (s *testSocket) SetDeadline(time.Time) error        { return nil }
func (s *testSocket) SetWriteDeadline(d time.Time) error { return nil }

// Traffic secrets of a harness connection's 1-RTT keys: fixed, so that
// the test, as the peer, holds the other end.
var (
	testClientSecret = bytes.Repeat([]byte{0xc1}, 32)
	testServerSecret = bytes.Repeat([]byte{0x5e}, 32)
)

// newTestAppKeys returns 1-RTT keys sealing with send and opening with recv.
func newTestAppKeys(t testing.TB, send, recv []byte) *handshake.AppKeys {
	t.Helper()
	k, err := handshake.NewAppKeys(tls.TLS_AES_128_GCM_SHA256, handshake.Version(wire.Version1))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.SetSendSecret(send); err != nil {
		t.Fatal(err)
	}
	if err := k.SetRecvSecret(recv); err != nil {
		t.Fatal(err)
	}
	return k
}

// defaultTestPeerParams are the transport parameters a harness
// connection's peer announced.
func defaultTestPeerParams() *wire.TransportParameters {
	p := wire.DefaultTransportParameters()
	p.InitialMaxData = 1 << 20
	p.InitialMaxStreamDataBidiLocal = 1 << 16
	p.InitialMaxStreamDataBidiRemote = 1 << 16
	p.InitialMaxStreamDataUni = 1 << 16
	p.InitialMaxStreamsBidi = 100
	p.InitialMaxStreamsUni = 100
	p.ActiveConnectionIDLimit = 2
	p.MaxIdleTimeout = 0 // ours alone counts
	return &p
}

// establishConn takes c's handshake as done with a peer that sent the
// parameters peer and uses peerCID: what the handshake would have set up,
// except the 1-RTT keys (the caller's). c's Transport must be initialized.
func establishConn(t testing.TB, c *Conn, peer *wire.TransportParameters, peerCID []byte) {
	t.Helper()
	if err := c.cids.initLocal(c.t, c, &c.out, &c.path); err != nil {
		t.Fatal(err)
	}
	c.cids.dest = peerCID
	c.cids.origDest = []byte{9, 9, 9, 9, 9, 9, 9, 9}
	if err := c.startTLS(); err != nil {
		t.Fatal(err)
	}
	// The connection may release crypto/tls itself (a server after its
	// handshake, releaseTLS); closing it again is harmless.
	tlsConn := c.hs.tls
	t.Cleanup(func() { tlsConn.Close() })
	c.hs.peerParams = peer
	c.hs.peerAckDelayExp = peer.AckDelayExponent
	c.loss.rec.SetMaxAckDelay(peer.MaxAckDelay)
	c.flow.send.Init(peer.InitialMaxData)
	if err := c.streams.counts.SetPeerLimits(peer.InitialMaxStreamsBidi, peer.InitialMaxStreamsUni); err != nil {
		t.Fatal(err)
	}
	c.datagrams.peerSupports = peer.MaxDatagramFrameSize > 0
	c.datagrams.peerMax = peer.MaxDatagramFrameSize
	if err := c.cids.initRemote(peer, c.t, c); err != nil {
		t.Fatal(err)
	}
	c.wake()
	c.admit.validated = true
	c.hs.complete = true
	close(c.handshakeDoneCh)
	c.confirmHandshake(time.Now())
}

// newOfflineConn returns a server connection whose handshake is taken as
// done, for feeding it frames directly (processPayload). Nothing runs its
// event loop.
func newOfflineConn(t testing.TB) *Conn {
	t.Helper()
	tr := &Transport{Conn: newTestSocket()}
	if err := tr.init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	conf, err := populateConfig(&Config{InitialStreamReceiveWindow: 1000, InitialConnectionReceiveWindow: 5000, MaxIncomingStreams: 10})
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := serverTLS(t)
	tlsConf.MinVersion = tls.VersionTLS13
	c := newConn(context.Background(), tr, false, conf, tlsConf, wire.Version1, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
	peer := defaultTestPeerParams()
	peer.ActiveConnectionIDLimit = 4
	establishConn(t, c, peer, []byte{5, 6, 7, 8})
	return c
}

// connSide says which end of the connection the harness's Conn is.
type connSide bool

const (
	serverSide connSide = false
	clientSide connSide = true
)

// testConnOption changes the configuration of a harness connection or the
// transport parameters its peer announced, before it starts.
type testConnOption func(*Config, *wire.TransportParameters)

// testFrame is a frame the connection sent, with where it came in.
type testFrame struct {
	space int
	pn    uint64
	size  int      // of the datagram
	dgram int      // which datagram: 1 for the first the connection sent
	to    net.Addr // where the datagram went
	wire.Frame
}

// testConn is a connection whose peer is the test.
type testConn struct {
	t    *testing.T
	conn *Conn
	tr   *Transport
	sock *testSocket
	peer net.Addr // the test's address

	ourCID  []byte // the connection's: the test's packets go there
	peerCID []byte // the test's: the connection's packets come to it

	// keys seal what the test sends and open what it receives: the 1-RTT
	// keys, the Initial keys of a dialing client (newDialingTestConn) and,
	// after serveHandshake, its Handshake and 1-RTT keys.
	keys          *handshake.AppKeys
	initialSealer *handshake.Sealer
	initialOpener *handshake.Opener
	hsSealer      *handshake.Sealer // set by serveHandshake
	hsOpener      *handshake.Opener
	nextPN        [3]uint64
	received      [3][]uint64 // packet numbers received, per space
	pending       []testFrame // parsed, not yet read by the test
	all           []testFrame // every frame parsed
	undecryptable []sentPacketOf
	dgrams        int // datagrams the connection sent
	ignored       map[wire.FrameType]bool
}

// testRTT is the round-trip time a harness connection measures at start.
const testRTT = 10 * time.Millisecond

// newTestConn returns a running connection (on side) whose handshake is
// taken as done, with the test as its peer. Call it inside synctest.Test.
// Its configuration defaults to small flow-control windows (1000 bytes per
// stream, 5000 for the connection), 10 streams of each kind and no path
// MTU discovery; the peer's limits to 64 KiB per stream, 1 MiB for the
// connection and 100 streams. The frames it sends at start (new
// connection IDs) are read and acknowledged; PADDING and ACK frames are
// ignored unless the test calls acceptFrames.
func newTestConn(t *testing.T, side connSide, opts ...testConnOption) *testConn {
	t.Helper()
	conf := &Config{
		InitialStreamReceiveWindow:     1000,
		InitialConnectionReceiveWindow: 5000,
		MaxIncomingStreams:             10,
		MaxIncomingUniStreams:          10,
		DisablePathMTUDiscovery:        true,
	}
	peer := defaultTestPeerParams()
	for _, o := range opts {
		o(conf, peer)
	}
	tc := newTestConnBase(t, side)
	pconf, err := populateConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := serverTLS(t)
	if side == clientSide {
		tlsConf = clientTLS(t)
	}
	tlsConf.MinVersion = tls.VersionTLS13
	c := newConn(context.Background(), tc.tr, bool(side), pconf, tlsConf, wire.Version1, tc.peer)
	// Every number is used: an ACK of all received packets is then valid.
	c.spaces[spaceApp].skip = recovery.PacketNumberSkipper{}
	establishConn(t, c, peer, tc.peerCID)
	send, recv := testServerSecret, testClientSecret
	if side == clientSide {
		send, recv = recv, send
	}
	c.keys.app = newTestAppKeys(t, send, recv)
	tc.keys = newTestAppKeys(t, recv, send)
	tc.conn = c
	tc.ourCID = c.cids.src
	tc.tr.startConn(c)
	synctest.Wait()
	tc.readFrames()
	// The acknowledgment gives the connection an RTT sample.
	tc.advance(testRTT)
	tc.writeAck(spaceApp)
	return tc
}

func newTestConnBase(t *testing.T, side connSide) *testConn {
	tc := &testConn{
		t:       t,
		sock:    newTestSocket(),
		peer:    &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 4433},
		peerCID: []byte{0xee, 1, 2, 3, 4, 5, 6, 7},
		ignored: map[wire.FrameType]bool{wire.FrameTypePadding: true, wire.FrameTypeAck: true, wire.FrameTypeAckECN: true},
	}
	tc.tr = &Transport{Conn: tc.sock}
	if side == clientSide { // the test is the server, at 10.0.0.1:443
		tc.sock.local, tc.peer = tc.peer, tc.sock.local
	}
	if err := tc.tr.init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tc.tr.closeWith(ErrTransportClosed, true)
	})
	return tc
}

// newDialingTestConn starts a client's Dial and returns it once its first
// Initial left; the test is the server, holding the Initial keys. The
// handshake goes no further unless the test calls serveHandshake.
func newDialingTestConn(t *testing.T) *testConn {
	t.Helper()
	conf := &Config{DisablePathMTUDiscovery: true}
	tc := newTestConnBase(t, clientSide)
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	tlsConf := clientTLS(t)
	// A classical key share keeps the ClientHello within one Initial
	// packet, so that the padding of the first datagram is the packer's.
	tlsConf.CurvePreferences = []tls.CurveID{tls.X25519}
	go func() {
		defer close(dialed)
		_, _ = tc.tr.Dial(ctx, tc.peer, tlsConf, conf)
	}()
	t.Cleanup(func() {
		cancel()
		<-dialed
	})
	synctest.Wait()
	tc.tr.mu.Lock()
	for _, c := range tc.tr.handlers {
		tc.conn = c
	}
	tc.tr.mu.Unlock()
	if tc.conn == nil {
		t.Fatal("the client did not start")
	}
	tc.conn.mu.Lock()
	tc.ourCID = tc.conn.cids.src
	odcid := tc.conn.cids.origDest
	tc.conn.mu.Unlock()
	var err error
	tc.initialSealer, tc.initialOpener, err = handshake.NewInitialKeys(odcid, handshake.Version(wire.Version1), false)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// acceptFrames stops ignoring frames of these types (PADDING and ACK are
// ignored by default).
func (tc *testConn) acceptFrames(types ...wire.FrameType) {
	for _, ft := range types {
		delete(tc.ignored, ft)
	}
}

// wait lets the connection handle everything queued for it, and send.
func (tc *testConn) wait() { synctest.Wait() }

// advance lets d of virtual time pass, with the connection's timers.
func (tc *testConn) advance(d time.Duration) {
	tc.t.Helper()
	time.Sleep(d)
	synctest.Wait()
}

// advanceToTimer lets virtual time pass until the connection's next timer
// (loss detection, PTO, ACK delay, idle, closing) fired, and returns how
// long that was.
func (tc *testConn) advanceToTimer() time.Duration {
	tc.t.Helper()
	tc.wait()
	tc.conn.mu.Lock()
	now := time.Now()
	deadline := tc.conn.nextDeadlineLocked(now)
	tc.conn.mu.Unlock()
	if deadline.IsZero() {
		tc.t.Fatal("the connection has no timer set")
	}
	d := max(deadline.Sub(now), 0)
	tc.advance(d)
	return d
}

// writeFrames sends the frames in one packet of space (spaceInitial or
// spaceApp). STREAM and DATAGRAM frames get a Length field.
func (tc *testConn) writeFrames(space int, frames ...wire.Frame) {
	tc.t.Helper()
	var payload []byte
	for i := range frames {
		f := frames[i]
		if f.Type == wire.FrameTypeStream || f.Type == wire.FrameTypeDatagram {
			f.HasLength = true
		}
		payload = wire.AppendFrame(payload, &f)
	}
	tc.writePayload(space, payload)
}

// writePayload sends payload, raw frame bytes, in one packet of space with
// the next packet number.
func (tc *testConn) writePayload(space int, payload []byte) {
	tc.t.Helper()
	pn := tc.nextPN[space]
	tc.nextPN[space]++
	tc.writePacket(space, pn, payload)
}

// writePacket sends payload in one packet of space numbered pn.
func (tc *testConn) writePacket(space int, pn uint64, payload []byte) {
	tc.t.Helper()
	tc.writeDatagram(tc.sealPacket(nil, space, pn, payload))
}

// sealPacket appends a sealed packet of space holding payload to b.
func (tc *testConn) sealPacket(b []byte, space int, pn uint64, payload []byte) []byte {
	tc.t.Helper()
	const pnLen = 4
	start := len(b)
	lengthPos := -1
	switch space {
	case spaceApp:
		b = wire.AppendShortHeader(b, tc.ourCID, pnLen, tc.keys.KeyPhase(), false)
	case spaceInitial, spaceHandshake:
		hdr := wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: tc.ourCID, SrcConnID: tc.peerCID}
		if space == spaceHandshake {
			hdr.Type = wire.PacketTypeHandshake
		}
		if tc.longSealer(space) == nil {
			tc.t.Fatalf("no keys for space %d: use newDialingTestConn (and serveHandshake)", space)
		}
		b = wire.AppendLongHeader(b, &hdr, pnLen, 2)
		lengthPos = len(b) - 2
	default:
		tc.t.Fatalf("the harness cannot seal packets of space %d", space)
	}
	pnOffset := len(b)
	b = wire.AppendPacketNumber(b, pn, pnLen)
	b = append(b, payload...)
	if space == spaceInitial && len(b)-start < minInitialSize-tagLen {
		b = append(b, make([]byte, minInitialSize-tagLen-(len(b)-start))...)
	}
	if lengthPos >= 0 {
		wire.PutVarintWithLen(b[lengthPos:], uint64(len(b)-pnOffset+tagLen), 2)
	}
	end := len(b)
	b = append(b, make([]byte, tagLen)...)
	var err error
	if space == spaceApp {
		_, err = tc.keys.ProtectPacket(b[start:end:end+tagLen], pnOffset-start, pnLen, pn)
	} else {
		_, err = tc.longSealer(space).ProtectPacket(b[start:end:end+tagLen], pnOffset-start, pnLen, pn)
	}
	if err != nil {
		tc.t.Fatal(err)
	}
	return b
}

// longSealer returns the test's sealer for the Initial or Handshake space.
func (tc *testConn) longSealer(space int) *handshake.Sealer {
	if space == spaceHandshake {
		return tc.hsSealer
	}
	return tc.initialSealer
}

// writeDatagram hands the connection a datagram from the test's address
// and waits until it was handled.
func (tc *testConn) writeDatagram(d []byte) {
	tc.writeDatagramFrom(d, tc.peer)
}

// writeDatagramFrom is writeDatagram from another address.
func (tc *testConn) writeDatagramFrom(d []byte, from net.Addr) {
	tc.t.Helper()
	tc.sock.in <- testDatagram{data: d, from: from}
	synctest.Wait()
}

// writeAck acknowledges every packet of space the test received, except
// those numbered in lost.
func (tc *testConn) writeAck(space int, lost ...uint64) {
	tc.t.Helper()
	tc.collect()
	pns := slices.DeleteFunc(slices.Clone(tc.received[space]), func(pn uint64) bool { return slices.Contains(lost, pn) })
	if len(pns) == 0 {
		return
	}
	tc.writeFrames(space, wire.Frame{Type: wire.FrameTypeAck, AckRanges: ackRangesOf(pns)})
}

// ackRangesOf returns the ACK ranges, largest first, covering pns.
func ackRangesOf(pns []uint64) []wire.AckRange {
	s := slices.Clone(pns)
	slices.Sort(s)
	s = slices.Compact(s)
	var ranges []wire.AckRange
	for i := len(s) - 1; i >= 0; i-- {
		if n := len(ranges); n > 0 && ranges[n-1].Smallest == s[i]+1 {
			ranges[n-1].Smallest = s[i]
			continue
		}
		ranges = append(ranges, wire.AckRange{Smallest: s[i], Largest: s[i]})
	}
	return ranges
}

// collect opens and parses what the connection sent since the last call.
func (tc *testConn) collect() {
	tc.t.Helper()
	synctest.Wait()
	for _, d := range tc.sock.takeWritten() {
		tc.dgrams++
		tc.parseDatagram(d.data, d.from)
	}
}

func (tc *testConn) parseDatagram(d []byte, to net.Addr) {
	tc.t.Helper()
	for pkt, err := range coalesced.Packets(d) {
		if err != nil {
			tc.t.Fatalf("malformed datagram from the connection: %v", err)
		}
		tc.parsePacket(sentPacketOf{pkt: pkt, size: len(d), dgram: tc.dgrams, to: to})
	}
}

// sentPacketOf is a packet of a datagram the connection sent.
type sentPacketOf struct {
	pkt   []byte
	size  int // of the datagram
	dgram int
	to    net.Addr
}

func (tc *testConn) parsePacket(p sentPacketOf) {
	tc.t.Helper()
	pkt := p.pkt
	space := spaceApp
	var payload []byte
	var pn uint64
	var err error
	if wire.IsLongHeader(pkt[0]) {
		var hdr wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &hdr); err != nil {
			tc.t.Fatal(err)
		}
		opener := tc.initialOpener
		space = spaceInitial
		if hdr.Type == wire.PacketTypeHandshake {
			opener, space = tc.hsOpener, spaceHandshake
		}
		if (hdr.Type != wire.PacketTypeInitial && hdr.Type != wire.PacketTypeHandshake) || opener == nil {
			return // no keys for it
		}
		payload, pn, err = opener.UnprotectPacket(pkt, hdr.PNOffset, tc.largestReceived(space))
	} else {
		if tc.keys == nil || !tc.keys.CanReceive() {
			// The client's first 1-RTT packet, which comes with its
			// Finished: serveHandshake opens it once TLS read that.
			tc.undecryptable = append(tc.undecryptable, p)
			return
		}
		payload, pn, _, err = tc.keys.UnprotectPacket(pkt, 1+len(tc.peerCID), tc.largestReceived(space))
	}
	if err != nil {
		tc.t.Fatalf("cannot open a packet of the connection: %v", err)
	}
	tc.received[space] = append(tc.received[space], pn)
	for len(payload) > 0 {
		var f wire.Frame
		n, err := wire.ParseFrame(payload, &f)
		if err != nil {
			tc.t.Fatalf("the connection sent a malformed frame: %v", err)
		}
		tf := testFrame{space: space, pn: pn, size: p.size, dgram: p.dgram, to: p.to, Frame: f}
		tc.pending = append(tc.pending, tf)
		tc.all = append(tc.all, tf)
		payload = payload[n:]
	}
}

// framesOfDatagram returns the frames of the n-th datagram the
// connection sent, read by the test or not.
func (tc *testConn) framesOfDatagram(n int) []testFrame {
	var out []testFrame
	for _, f := range tc.all {
		if f.dgram == n {
			out = append(out, f)
		}
	}
	return out
}

func (tc *testConn) largestReceived(space int) int64 {
	if len(tc.received[space]) == 0 {
		return -1
	}
	return int64(slices.Max(tc.received[space]))
}

// readFrame returns the next frame the connection sent that is not
// ignored, or false when there is none (after letting it run).
func (tc *testConn) readFrame() (testFrame, bool) {
	tc.t.Helper()
	for {
		if len(tc.pending) == 0 {
			tc.collect()
		}
		if len(tc.pending) == 0 {
			return testFrame{}, false
		}
		f := tc.pending[0]
		tc.pending = tc.pending[1:]
		if !tc.ignored[f.Type] {
			return f, true
		}
	}
}

// readFrames returns every frame the connection sent and the test did not
// read yet, ignored types left out.
func (tc *testConn) readFrames() []testFrame {
	tc.t.Helper()
	var out []testFrame
	for {
		f, ok := tc.readFrame()
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

// wantFrame reads the next frame and fails unless it equals want (a
// STREAM or DATAGRAM frame's HasLength and a PADDING run's length are
// not compared).
func (tc *testConn) wantFrame(why string, want wire.Frame) testFrame {
	tc.t.Helper()
	got, ok := tc.readFrame()
	if !ok {
		tc.t.Fatalf("%s: the connection sent nothing, want %s", why, describeFrame(&want))
	}
	if !sameFrame(&got.Frame, &want) {
		tc.t.Fatalf("%s: the connection sent\n\t%s\nwant\n\t%s", why, describeFrame(&got.Frame), describeFrame(&want))
	}
	return got
}

// wantFrameType reads frames until one of type ft and returns it; it
// fails if another type comes first.
func (tc *testConn) wantFrameType(why string, ft wire.FrameType) testFrame {
	tc.t.Helper()
	got, ok := tc.readFrame()
	if !ok {
		tc.t.Fatalf("%s: the connection sent nothing, want %v", why, ft)
	}
	if got.Type != ft {
		tc.t.Fatalf("%s: the connection sent %s, want %v", why, describeFrame(&got.Frame), ft)
	}
	return got
}

// findFrame returns the first frame of type ft among those not read yet
// and drops the frames before it; it fails if there is none.
func (tc *testConn) findFrame(why string, ft wire.FrameType) testFrame {
	tc.t.Helper()
	for {
		got, ok := tc.readFrame()
		if !ok {
			tc.t.Fatalf("%s: the connection sent no %v", why, ft)
		}
		if got.Type == ft {
			return got
		}
	}
}

// wantNoFrame fails if the connection sent a frame that is not ignored.
func (tc *testConn) wantNoFrame(why string) {
	tc.t.Helper()
	if got, ok := tc.readFrame(); ok {
		tc.t.Fatalf("%s: the connection sent %s, want nothing", why, describeFrame(&got.Frame))
	}
}

// wantNoFrameOfType fails if a frame of type ft is among those not read
// yet; the others are dropped.
func (tc *testConn) wantNoFrameOfType(why string, ft wire.FrameType) {
	tc.t.Helper()
	for _, f := range tc.readFrames() {
		if f.Type == ft {
			tc.t.Fatalf("%s: the connection sent %s", why, describeFrame(&f.Frame))
		}
	}
}

// closeErr returns the connection's close error (nil while it is open).
func (tc *testConn) closeErr() error {
	tc.conn.mu.Lock()
	defer tc.conn.mu.Unlock()
	return tc.conn.close.err
}

// wantTransportClose checks that the connection closed with a local
// transport error of code and sent it in a CONNECTION_CLOSE frame.
func (tc *testConn) wantTransportClose(why string, code TransportErrorCode) {
	tc.t.Helper()
	var te *TransportError
	if err := tc.closeErr(); !errors.As(err, &te) || te.ErrorCode != code || te.Remote {
		tc.t.Fatalf("%s: close error %v, want local %s", why, err, code)
	}
	f := tc.findFrame(why, wire.FrameTypeConnectionClose)
	if TransportErrorCode(f.ErrorCode) != code {
		tc.t.Fatalf("%s: CONNECTION_CLOSE with %s, want %s", why, TransportErrorCode(f.ErrorCode), code)
	}
}

// wantOpen fails if the connection closed.
func (tc *testConn) wantOpen(why string) {
	tc.t.Helper()
	if err := tc.closeErr(); err != nil {
		tc.t.Fatalf("%s: the connection closed: %v", why, err)
	}
}

// sameFrame compares a received frame with an expected one.
func sameFrame(got, want *wire.Frame) bool {
	g, w := *got, *want
	g.HasLength, w.HasLength = false, false
	g.PaddingLen, w.PaddingLen = 0, 0
	for _, f := range []*wire.Frame{&g, &w} {
		if len(f.Data) == 0 {
			f.Data = nil
		}
		if len(f.Reason) == 0 {
			f.Reason = nil
		}
		if len(f.Token) == 0 {
			f.Token = nil
		}
		if len(f.ConnectionID) == 0 {
			f.ConnectionID = nil
		}
		if len(f.AckRanges) == 0 {
			f.AckRanges = nil
		}
	}
	return reflect.DeepEqual(g, w)
}

// describeFrame names a frame's type and the fields that are set.
func describeFrame(f *wire.Frame) string {
	var b strings.Builder
	b.WriteString(f.Type.String())
	v := reflect.ValueOf(*f)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Type" || v.Field(i).IsZero() {
			continue
		}
		val := v.Field(i).Interface()
		if d, ok := val.([]byte); ok && len(d) > 16 {
			val = fmt.Sprintf("%d bytes", len(d))
		}
		fmt.Fprintf(&b, " %s=%v", name, val)
	}
	return b.String()
}

// streamFrame is a STREAM frame carrying data at off.
func streamFrame(id, off uint64, data string, fin bool) wire.Frame {
	return wire.Frame{Type: wire.FrameTypeStream, StreamID: id, Offset: off, Data: []byte(data), Fin: fin}
}

// deadlineReader is a stream that can be read without waiting.
type deadlineReader interface {
	Read([]byte) (int, error)
	SetReadDeadline(time.Time) error
}

// readNow reads up to n bytes that are there without waiting (a deadline
// in the past).
func readNow(t *testing.T, st deadlineReader, n int) (string, error) {
	t.Helper()
	_ = st.SetReadDeadline(time.Now().Add(-time.Second))
	buf := make([]byte, n)
	k, err := st.Read(buf)
	return string(buf[:k]), err
}

// acceptStream returns the next stream the peer opened, failing if there
// is none.
func (tc *testConn) acceptStream() *Stream {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	st, err := tc.conn.AcceptStream(ctx)
	if err != nil {
		tc.t.Fatalf("no stream to accept: %v", err)
	}
	return st
}

// acceptUniStream is acceptStream for unidirectional streams.
func (tc *testConn) acceptUniStream() *ReceiveStream {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	st, err := tc.conn.AcceptUniStream(ctx)
	if err != nil {
		tc.t.Fatalf("no stream to accept: %v", err)
	}
	return st
}

// openStream opens a bidirectional stream of the connection.
func (tc *testConn) openStream() *Stream {
	tc.t.Helper()
	st, err := tc.conn.OpenStream()
	if err != nil {
		tc.t.Fatal(err)
	}
	return st
}

// openUniStream opens a unidirectional stream of the connection.
func (tc *testConn) openUniStream() *SendStream {
	tc.t.Helper()
	st, err := tc.conn.OpenUniStream()
	if err != nil {
		tc.t.Fatal(err)
	}
	return st
}

// mustWrite writes n zero bytes on st and fails on an error.
func mustWrite(t *testing.T, st interface{ Write([]byte) (int, error) }, n int) {
	t.Helper()
	if _, err := st.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
}

// serveHandshake plays the server's side of a dialing client's handshake
// (newDialingTestConn) with crypto/tls, the test certificate and the
// transport parameters peer (defaultTestPeerParams when nil): it answers
// the ClientHello with an Initial and a Handshake packet in one datagram
// and reads the client's Finished (unless the client closed), leaving
// every frame the client sent unread for the test. The original and
// initial source connection IDs are filled in unless peer has them. The client's handshake is then complete, not
// confirmed: HANDSHAKE_DONE is the test's to send.
func (tc *testConn) serveHandshake(peer *wire.TransportParameters) {
	tc.t.Helper()
	if peer == nil {
		peer = defaultTestPeerParams()
	}
	if !peer.HasOriginalDestinationConnectionID {
		tc.conn.mu.Lock()
		peer.OriginalDestinationConnectionID = tc.conn.cids.origDest
		tc.conn.mu.Unlock()
		peer.HasOriginalDestinationConnectionID = true
	}
	if !peer.HasInitialSourceConnectionID {
		peer.InitialSourceConnectionID = tc.peerCID
		peer.HasInitialSourceConnectionID = true
	}
	params, err := peer.Marshal(nil, PerspectiveServer)
	if err != nil {
		tc.t.Fatal(err)
	}
	conf := serverTLS(tc.t)
	conf.MinVersion = tls.VersionTLS13
	srv := tls.QUICServer(&tls.QUICConfig{TLSConfig: conf})
	tc.t.Cleanup(func() { srv.Close() })
	if err := srv.Start(context.Background()); err != nil {
		tc.t.Fatal(err)
	}
	var out [3][]byte // CRYPTO data to send, per space
	v := handshake.Version(wire.Version1)
	handle := func(level tls.QUICEncryptionLevel, data []byte) {
		tc.t.Helper()
		if err := srv.HandleData(level, data); err != nil {
			tc.t.Fatalf("TLS server: %v", err)
		}
		for {
			ev := srv.NextEvent()
			switch ev.Kind {
			case tls.QUICNoEvent:
				return
			case tls.QUICTransportParametersRequired:
				srv.SetTransportParameters(params)
			case tls.QUICWriteData:
				space, _ := levelSpace(ev.Level)
				out[space] = append(out[space], ev.Data...)
			case tls.QUICSetReadSecret, tls.QUICSetWriteSecret:
				write := ev.Kind == tls.QUICSetWriteSecret
				switch ev.Level {
				case tls.QUICEncryptionLevelHandshake:
					if write {
						tc.hsSealer, err = handshake.NewSealer(ev.Suite, ev.Data, v)
					} else {
						tc.hsOpener, err = handshake.NewOpener(ev.Suite, ev.Data, v)
					}
				case tls.QUICEncryptionLevelApplication:
					if tc.keys == nil {
						tc.keys, err = handshake.NewAppKeys(ev.Suite, v)
					}
					if err == nil && write {
						err = tc.keys.SetSendSecret(ev.Data)
					} else if err == nil {
						err = tc.keys.SetRecvSecret(ev.Data)
					}
				}
				if err != nil {
					tc.t.Fatal(err)
				}
			}
		}
	}
	hello := tc.cryptoData(spaceInitial)
	handle(tls.QUICEncryptionLevelInitial, hello)
	d := tc.sealPacket(nil, spaceInitial, tc.nextPN[spaceInitial],
		wire.AppendCryptoFrame(wire.AppendAckFrame(nil, ackRangesOf(tc.received[spaceInitial]), 0), 0, out[spaceInitial]))
	tc.nextPN[spaceInitial]++
	d = tc.sealPacket(d, spaceHandshake, tc.nextPN[spaceHandshake], wire.AppendCryptoFrame(nil, 0, out[spaceHandshake]))
	tc.nextPN[spaceHandshake]++
	tc.writeDatagram(d)
	if tc.closeErr() != nil {
		return // the client refused the server's flight
	}
	handle(tls.QUICEncryptionLevelHandshake, tc.cryptoData(spaceHandshake))
	kept := tc.undecryptable
	tc.undecryptable = nil
	for _, p := range kept {
		tc.parsePacket(p)
	}
}

// cryptoData returns the CRYPTO data of space among the frames not read
// yet, which stay unread; it fails unless they are contiguous from 0.
func (tc *testConn) cryptoData(space int) []byte {
	tc.t.Helper()
	tc.collect()
	var data []byte
	for _, f := range tc.pending {
		if f.space != space || f.Type != wire.FrameTypeCrypto || f.Offset+uint64(len(f.Data)) <= uint64(len(data)) {
			continue
		}
		if f.Offset > uint64(len(data)) {
			tc.t.Fatalf("CRYPTO data of space %d with a gap at %d", space, len(data))
		}
		data = append(data, f.Data[uint64(len(data))-f.Offset:]...)
	}
	if len(data) == 0 {
		tc.t.Fatalf("no CRYPTO data in space %d", space)
	}
	return data
}
