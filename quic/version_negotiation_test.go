package quic

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
	"github.com/turboretry/turboretry/internal/wire"
)

// seenPacket is a long-header packet a versionRelay passed on.
type seenPacket struct {
	fromClient bool
	version    wire.Version
	typ        wire.PacketType
}

// versionRelay relays between one client and a server and records the
// version and type of every long-header packet. With forgeVN set it answers
// every client packet of a version not in forgeVN itself, with a Version
// Negotiation packet listing forgeVN, and drops it (an attacker's downgrade
// attempt).
type versionRelay struct {
	*filterRelay
	mu   sync.Mutex
	seen []seenPacket
	// early, once holdUntilEarlyData made it, is closed when a client
	// 0-RTT packet passes; until then the server's datagrams wait.
	early     chan struct{}
	earlySeen bool
}

func newVersionRelay(t *testing.T, server net.Addr, forgeVN ...wire.Version) *versionRelay {
	r := &versionRelay{}
	r.filterRelay = newFilterRelay(t, server, func(fromClient bool, d []byte) (bool, []byte) {
		r.mu.Lock()
		zeroRTT := r.record(d, fromClient)
		early := r.early
		if fromClient && zeroRTT && early != nil && !r.earlySeen {
			r.earlySeen = true
			close(early)
		}
		r.mu.Unlock()
		if !fromClient && early != nil {
			select {
			case <-early:
			case <-time.After(10 * time.Second): // hang guard; the test then fails its 0-RTT check
			}
		}
		var hdr wire.LongHeader
		if fromClient && forgeVN != nil && wire.ParseLongHeader(d, &hdr) == nil && !slices.Contains(forgeVN, hdr.Version) {
			vn := wire.AppendVersionNegotiationHeader(nil, 0, hdr.DestConnID, hdr.SrcConnID)
			for _, v := range forgeVN {
				vn = binary.BigEndian.AppendUint32(vn, uint32(v))
			}
			return false, vn
		}
		return true, nil
	})
	return r
}

// record notes the long-header packets of datagram d and reports whether
// one is a 0-RTT packet. r.mu is held.
func (r *versionRelay) record(d []byte, fromClient bool) (zeroRTT bool) {
	for pkt, err := range coalesced.Packets(d) {
		if err != nil || !wire.IsLongHeader(pkt[0]) {
			return zeroRTT
		}
		var hdr wire.LongHeader
		if wire.ParseLongHeader(pkt, &hdr) != nil {
			return zeroRTT
		}
		r.seen = append(r.seen, seenPacket{fromClient: fromClient, version: hdr.Version, typ: hdr.Type})
		zeroRTT = zeroRTT || hdr.Type == wire.PacketType0RTT
	}
	return zeroRTT
}

// holdUntilEarlyData makes the relay hold the server's datagrams until
// the client has sent a 0-RTT packet: the client cannot complete the
// handshake before, so its first stream data is 0-RTT whatever the
// scheduling.
func (r *versionRelay) holdUntilEarlyData() {
	r.mu.Lock()
	r.early = make(chan struct{})
	r.mu.Unlock()
}

// versions returns the versions of the packets of type typ one side sent,
// in order.
func (r *versionRelay) versions(fromClient bool, typ wire.PacketType) []wire.Version {
	r.mu.Lock()
	defer r.mu.Unlock()
	var vs []wire.Version
	for _, p := range r.seen {
		if p.fromClient == fromClient && p.typ == typ {
			vs = append(vs, p.version)
		}
	}
	return vs
}

// checkNegotiated checks that the connection both sides report is in
// version want, that the client started in v1, and that every Handshake
// packet either side sent was in want (RFC 9369 section 4.1).
func (r *versionRelay) checkNegotiated(t *testing.T, want wire.Version) {
	t.Helper()
	ci := r.versions(true, wire.PacketTypeInitial)
	if len(ci) == 0 || ci[0] != wire.Version1 {
		t.Errorf("client Initial versions %v, want the first in v1", ci)
	}
	if si := r.versions(false, wire.PacketTypeInitial); !slices.Contains(si, want) {
		t.Errorf("server Initial versions %v, want %v among them", si, want)
	}
	for _, fromClient := range []bool{true, false} {
		hs := r.versions(fromClient, wire.PacketTypeHandshake)
		if len(hs) == 0 || slices.ContainsFunc(hs, func(v wire.Version) bool { return v != want }) {
			t.Errorf("Handshake versions (client %v): %v, want all %v", fromClient, hs, want)
		}
	}
}

// vnEchoServer is an echo server whose accepted connections report on conns.
func vnEchoServer(t *testing.T, ctx context.Context, tr *Transport, conf *Config) <-chan *Conn {
	ln, err := tr.Listen(serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan *Conn, 4)
	serveStreams(ctx, func(ctx context.Context) (*Conn, error) {
		c, err := ln.Accept(ctx)
		if err == nil {
			conns <- c
		}
		return c, err
	}, func(s *Stream) { echo(s) })
	return conns
}

func TestCompatibleVersionNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name           string
		server, client []Version
		want           wire.Version
	}{
		// The server prefers v2: a v1 client that offers v2 moves there
		// in the server's first flight.
		{"server prefers v2", []Version{Version2, Version1}, nil, wire.Version2},
		// The defaults change nothing.
		{"defaults", nil, nil, wire.Version1},
		// A client that offers only v1 stays there.
		{"client offers only v1", []Version{Version2, Version1}, []Version{Version1}, wire.Version1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			tr := &Transport{Conn: listenUDP(t)}
			defer tr.Close()
			conns := vnEchoServer(t, ctx, tr, &Config{Versions: tc.server})
			relay := newVersionRelay(t, tr.Conn.LocalAddr())
			c := dialOurs(t, ctx, relay.down.LocalAddr(), &Config{Versions: tc.client})
			s, err := c.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			echoCheck(t, s, testData(20_000, 3))
			if v := c.ConnectionState().Version; v != Version(tc.want) {
				t.Errorf("client: version %s, want %s", v, Version(tc.want))
			}
			select {
			case sc := <-conns:
				if v := sc.ConnectionState().Version; v != Version(tc.want) {
					t.Errorf("server: version %s, want %s", v, Version(tc.want))
				}
			case <-ctx.Done():
				t.Fatal("no server connection")
			}
			relay.checkNegotiated(t, tc.want)
		})
	}
}

// TestCompatibleVersionNegotiationAfterRetry: the Retry and the Initial
// with its token stay in v1 (RFC 9369 section 4.1), then the server
// switches to v2.
func TestCompatibleVersionNegotiationAfterRetry(t *testing.T) {
	ctx := testCtx(t)
	tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{Policy: AlwaysRetry()}}
	defer tr.Close()
	vnEchoServer(t, ctx, tr, &Config{Versions: []Version{Version2, Version1}})
	relay := newVersionRelay(t, tr.Conn.LocalAddr())
	c := dialOurs(t, ctx, relay.down.LocalAddr(), nil)
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("after retry"))
	if v := c.ConnectionState().Version; v != Version2 {
		t.Errorf("version %s, want v2", v)
	}
	// One Retry per client Initial of the first flight (the ClientHello
	// may take two), all in v1.
	if rv := relay.versions(false, wire.PacketTypeRetry); len(rv) == 0 || slices.ContainsFunc(rv, func(v wire.Version) bool { return v != wire.Version1 }) {
		t.Errorf("Retry versions %v, want v1 only", rv)
	}
	relay.checkNegotiated(t, wire.Version2)
}

// TestCompatibleVersionNegotiationZeroRTT: a resumed client's 0-RTT
// packets stay in v1 while the server moves the connection to v2, and the
// server accepts them (RFC 9369 section 4.1).
func TestCompatibleVersionNegotiationZeroRTT(t *testing.T) {
	ctx := testCtx(t)
	tr := &Transport{Conn: listenUDP(t)}
	defer tr.Close()
	_, results := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true, Versions: []Version{Version2, Version1}}, serverTLS(t))
	relay := newVersionRelay(t, tr.Conn.LocalAddr())
	ctls, cache := resumingClientTLS(t)
	c1, err := Dial(ctx, listenUDP(t), relay.down.LocalAddr(), ctls, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c1.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("first"))
	recvResult(t, ctx, results)
	waitSignal(t, ctx, cache.put, "session ticket")
	c1.CloseWithError(0, "")

	relay.holdUntilEarlyData()
	c2, err := DialEarly(ctx, listenUDP(t), relay.down.LocalAddr(), ctls, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseWithError(0, "")
	s, err = c2.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("early data"))
	r := recvResult(t, ctx, results)
	if !r.used0RTT || r.packets0RTT == 0 {
		t.Errorf("server: 0-RTT used %v, %d 0-RTT packets", r.used0RTT, r.packets0RTT)
	}
	if v := c2.ConnectionState().Version; v != Version2 {
		t.Errorf("version %s, want v2", v)
	}
	zr := relay.versions(true, wire.PacketType0RTT)
	if len(zr) == 0 || slices.ContainsFunc(zr, func(v wire.Version) bool { return v != wire.Version1 }) {
		t.Errorf("client 0-RTT versions %v, want all v1", zr)
	}
}

// TestVersionDowngradeDetected: a forged Version Negotiation packet that
// lists only v1 makes a client that prefers v2 start over in v1; the
// server's version_information shows that it speaks v2 too, and the client
// closes with VERSION_NEGOTIATION_ERROR (RFC 9368 section 4). Without the
// forgery the same client and server agree.
func TestVersionDowngradeDetected(t *testing.T) {
	ctx := testCtx(t)
	tr := &Transport{Conn: listenUDP(t)}
	defer tr.Close()
	vnEchoServer(t, ctx, tr, nil)
	conf := &Config{Versions: []Version{Version2, Version1}}

	relay := newVersionRelay(t, tr.Conn.LocalAddr(), wire.Version1)
	_, err := Dial(ctx, listenUDP(t), relay.down.LocalAddr(), clientTLS(t), conf)
	var te *TransportError
	if !errors.As(err, &te) || te.ErrorCode != TransportErrorCode(qerr.VersionNegotiationError) || te.Remote {
		t.Fatalf("dial after a forged Version Negotiation: %v, want a local VERSION_NEGOTIATION_ERROR", err)
	}

	relay = newVersionRelay(t, tr.Conn.LocalAddr())
	c := dialOurs(t, ctx, relay.down.LocalAddr(), conf)
	// The server prefers v1 (its default order) and moves the client there.
	if v := c.ConnectionState().Version; v != Version1 {
		t.Errorf("version %s, want v1", v)
	}
}

// TestVersionNegotiationQuicGo: quic-go v0.65 sends no version_information
// (it implements no RFC 9368), so our server keeps its clients in the
// version they start in, and our client stays in v1 with its server.
func TestVersionNegotiationQuicGo(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, &Config{Versions: []Version{Version2, Version1}})
	for _, v := range []quicgo.Version{quicgo.Version1, quicgo.Version2} {
		qc, err := quicgo.DialAddr(ctx, addr, clientTLS(t), &quicgo.Config{Versions: []quicgo.Version{v}})
		if err != nil {
			t.Fatal(err)
		}
		echoOver(t, ctx, qc, 3)
		if got := qc.ConnectionState().Version; got != v {
			t.Errorf("quic-go client starting in %s: version %s", v, got)
		}
		qc.CloseWithError(0, "")
	}
	c, err := DialAddr(ctx, quicgoEchoServer(t, ctx), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	if v := c.ConnectionState().Version; v != Version1 {
		t.Errorf("our client with quic-go's server: version %s, want v1", v)
	}
}

// TestReservedVersionElicitsVersionNegotiation: a client that offers only
// a reserved version gets Version Negotiation from our server and from
// quic-go's, and fails with VersionNegotiationError listing their versions.
func TestReservedVersionElicitsVersionNegotiation(t *testing.T) {
	ctx := testCtx(t)
	const reserved Version = 0x1a2a3a4a
	for name, addr := range map[string]string{
		"ours":    ourEchoServer(t, ctx, nil),
		"quic-go": quicgoEchoServer(t, ctx),
	} {
		_, err := DialAddr(ctx, addr, clientTLS(t), &Config{Versions: []Version{reserved}})
		var ve *VersionNegotiationError
		if !errors.As(err, &ve) || !slices.Contains(ve.Theirs, Version1) || !slices.Equal(ve.Ours, []Version{reserved}) {
			t.Errorf("%s: %v, want VersionNegotiationError offering v1", name, err)
		}
	}
	if _, err := populateConfig(&Config{Versions: []Version{0x12345678}}); err == nil {
		t.Error("an unknown, unreserved version was accepted in Config.Versions")
	}
}

// vnTestConn is a connection with just what versionNegotiation.negotiate
// needs.
func vnTestConn(t *testing.T, isClient bool, v wire.Version, versions ...Version) *Conn {
	conf, err := populateConfig(&Config{Versions: versions})
	if err != nil {
		t.Fatal(err)
	}
	c := &Conn{isClient: isClient, version: v, config: conf}
	c.cids.clientDest = []byte{1, 2, 3, 4, 5, 6, 7, 8}
	s, o, err := handshake.NewInitialKeys(c.cids.clientDest, v, false)
	if err != nil {
		t.Fatal(err)
	}
	c.spaces[spaceInitial].sealer, c.spaces[spaceInitial].opener = s, o
	return c
}

func vnCode(err error) qerr.TransportErrorCode {
	var te *qerr.TransportError
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// TestNegotiateVersionChecks covers the checks of version_information a
// real peer cannot be made to fail (RFC 9368 section 4).
func TestNegotiateVersionChecks(t *testing.T) {
	vi := func(chosen wire.Version, avail ...wire.Version) *wire.TransportParameters {
		return &wire.TransportParameters{VersionInformation: &wire.VersionInformation{ChosenVersion: chosen, AvailableVersions: avail}}
	}
	// Server side.
	for _, tc := range []struct {
		name string
		p    *wire.TransportParameters
		code qerr.TransportErrorCode
		want wire.Version
	}{
		{"chosen not available", vi(wire.Version1, wire.Version2), qerr.TransportParameterError, wire.Version1},
		{"chosen is not the Initial's version", vi(wire.Version2, wire.Version2, wire.Version1), qerr.VersionNegotiationError, wire.Version1},
		{"switch to the server's preference", vi(wire.Version1, wire.Version1, wire.Version2), 0, wire.Version2},
		{"reserved versions are never picked", vi(wire.Version1, 0x0a0a0a0a, wire.Version1), 0, wire.Version1},
		{"no version_information", &wire.TransportParameters{}, 0, wire.Version1},
	} {
		c := vnTestConn(t, false, wire.Version1, Version2, Version1)
		err := c.x.vn.negotiate(tc.p, c.isClient, &c.version, &c.spaces[spaceInitial], c.cids.clientDest, c.hs.versionRestarted, c.config)
		if vnCode(err) != tc.code || (tc.code == 0 && err != nil) || c.version != tc.want {
			t.Errorf("server, %s: %v, version %s; want code %#x, version %s", tc.name, err, c.version, uint64(tc.code), tc.want)
		}
	}
	// Client side: we started in v1 offering v1 and v2.
	for _, tc := range []struct {
		name      string
		negotiate wire.Version // the version the client switched to (0: none)
		restarted bool
		p         *wire.TransportParameters
		fail      bool
	}{
		{"chosen is not the negotiated version", 0, false, vi(wire.Version2, wire.Version2), true},
		{"chosen was not offered", 0, false, vi(0x0a1a2a3a, 0x0a1a2a3a), true},
		{"switched without version_information", wire.Version2, false, &wire.TransportParameters{}, true},
		{"restarted without version_information", 0, true, &wire.TransportParameters{}, true},
		{"no version_information, no negotiation", 0, false, &wire.TransportParameters{}, false},
		{"switched to v2", wire.Version2, false, vi(wire.Version2, wire.Version1, wire.Version2), false},
	} {
		c := vnTestConn(t, true, wire.Version1, Version1, Version2)
		c.hs.versionRestarted = tc.restarted
		if tc.negotiate != 0 {
			c.x.vn = versionNegotiation{switched: true, chosen: c.version}
			c.version = tc.negotiate
		}
		err := c.x.vn.negotiate(tc.p, c.isClient, &c.version, &c.spaces[spaceInitial], c.cids.clientDest, c.hs.versionRestarted, c.config)
		if tc.fail != (vnCode(err) == qerr.VersionNegotiationError) || (!tc.fail && err != nil) {
			t.Errorf("client, %s: %v, want failure %v", tc.name, err, tc.fail)
		}
	}
}
