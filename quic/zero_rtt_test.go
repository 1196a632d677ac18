package quic

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/netip"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
	"github.com/turboretry/turboretry/internal/wire"
)

// handshakeHold keeps back, while holding, the server's datagrams to the
// client that carry a Handshake packet. The client then cannot complete
// the handshake, so whatever it sends is 0-RTT, and the server cannot
// complete it either (it needs the client's Finished).
type handshakeHold struct {
	s      *sim
	server netip.AddrPort

	mu      sync.Mutex
	holding bool
	held    []simnet.Packet
	// shortPassed counts the server's short-header (1-RTT) datagrams
	// passed on while holding.
	shortPassed int
}

// holdHandshake installs a handshakeHold for the server at server.
func (s *sim) holdHandshake(server netip.AddrPort) *handshakeHold {
	h := &handshakeHold{s: s, server: server}
	s.tap(func(p *simnet.Packet) bool {
		if p.From != server {
			return true
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		switch {
		case !h.holding:
		case hasHandshakePacket(p.Data):
			h.held = append(h.held, *p)
			return false
		case p.Data[0]&0x80 == 0:
			h.shortPassed++
		}
		return true
	})
	return h
}

func (h *handshakeHold) hold() {
	h.mu.Lock()
	h.holding = true
	h.mu.Unlock()
}

// release stops holding and sends what was held, in order.
func (h *handshakeHold) release() {
	h.mu.Lock()
	h.holding = false
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for _, p := range held {
		h.s.net.Inject(p, h.s.net.Link(p.From.Addr(), p.To.Addr()).Delay)
	}
}

func (h *handshakeHold) shortPassedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shortPassed
}

func hasHandshakePacket(d []byte) bool {
	for pkt, err := range coalesced.Packets(d) {
		if err != nil {
			return false
		}
		var hdr wire.LongHeader
		if wire.ParseLongHeader(pkt, &hdr) == nil && hdr.Type == wire.PacketTypeHandshake {
			return true
		}
	}
	return false
}

// notifyingSessionCache signals every session ticket stored.
type notifyingSessionCache struct {
	tls.ClientSessionCache
	put chan struct{}
}

func newNotifyingSessionCache() *notifyingSessionCache {
	return &notifyingSessionCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), put: make(chan struct{}, 16)}
}

func (c *notifyingSessionCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.put <- struct{}{}
	}
}

// notifyingQuicGoStore signals every token quic-go's client stores.
type notifyingQuicGoStore struct {
	quicgo.TokenStore
	put chan struct{}
}

func (s *notifyingQuicGoStore) Put(key string, tok *quicgo.ClientToken) {
	s.TokenStore.Put(key, tok)
	s.put <- struct{}{}
}

// waitSignal waits for a signal on ch; what names it in the failure.
func waitSignal(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("no", what)
	}
}

// earlyResult is what the 0-RTT test server saw on a connection.
type earlyResult struct {
	data        []byte
	beforeDone  bool // the stream's data was read before handshake completion
	used0RTT    bool
	packets0RTT uint64
	err         error
}

// earlyEchoServer accepts on an EarlyListener, reads each connection's
// first stream to its end, reports, and echoes it back.
func earlyEchoServer(t *testing.T, ctx context.Context, tr *Transport, conf *Config, tlsConf *tls.Config) (*EarlyListener, <-chan earlyResult) {
	ln, err := tr.ListenEarly(tlsConf, conf)
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan earlyResult, 8)
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				s, err := c.AcceptStream(ctx)
				if err != nil {
					results <- earlyResult{err: err}
					return
				}
				data, err := io.ReadAll(s)
				r := earlyResult{data: data, err: err}
				select {
				case <-c.HandshakeComplete():
				default:
					r.beforeDone = true
				}
				r.used0RTT = c.ConnectionState().Used0RTT
				c.mu.Lock()
				r.packets0RTT = c.early.packets
				c.mu.Unlock()
				results <- r
				_, _ = s.Write(data)
				_ = s.Close()
			}()
		}
	}()
	return ln, results
}

func recvResult(t *testing.T, ctx context.Context, ch <-chan earlyResult) earlyResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal("server:", r.err)
		}
		return r
	case <-ctx.Done():
		t.Fatal("server saw no stream")
	}
	return earlyResult{}
}

// serverTransport is a Transport at simServerAddr, closed when the test
// ends, with av for its address validation.
func (s *sim) serverTransport(av *AddressValidationConfig) *Transport {
	tr := &Transport{Conn: s.socket(simServerAddr), AddressValidation: av}
	s.t.Cleanup(func() { tr.Close() })
	return tr
}

// quicGoTransport is quic-go's Transport on a new endpoint at addr, closed
// when the test ends.
func (s *sim) quicGoTransport(addr netip.AddrPort) *quicgo.Transport {
	tr := &quicgo.Transport{Conn: s.socket(addr).Conn}
	s.t.Cleanup(func() { tr.Close() })
	return tr
}

// TestZeroRTTWithNewToken: quic-go resumes with a NEW_TOKEN token and a
// session ticket to an AlwaysRetry server. It skips the Retry, its 0-RTT
// stream data is accepted, and the server reads it while the server's
// Handshake packets are still held back (before handshake completion).
func TestZeroRTTWithNewToken(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		tr := s.serverTransport(&AddressValidationConfig{Policy: AlwaysRetry()})
		_, results := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, serverTLS(t))
		hold := s.holdHandshake(simServerAddr)
		ctls, cache := resumingClientTLS(t)
		store := &notifyingQuicGoStore{TokenStore: quicgo.NewLRUTokenStore(4, 4), put: make(chan struct{}, 16)}
		qconf := &quicgo.Config{TokenStore: store}
		qtr := s.quicGoTransport(simClientAddr(1))

		c, err := qtr.Dial(ctx, tr.Conn.LocalAddr(), ctls, qconf)
		if err != nil {
			t.Fatal(err)
		}
		echoOnNewStream(t, c.OpenStream, []byte("first, full handshake"))
		recvResult(t, ctx, results)
		waitSignal(t, ctx, cache.put, "session ticket")
		waitSignal(t, ctx, store.put, "NEW_TOKEN token")
		_ = c.CloseWithError(0, "")
		retries := tr.AddressValidationStats().RetriesSent

		hold.hold()
		c, err = qtr.DialEarly(ctx, tr.Conn.LocalAddr(), ctls, qconf)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		msg := []byte("early data")
		st := writeOnNewStream(t, c.OpenStream, msg)
		r := recvResult(t, ctx, results)
		hold.release()
		if string(r.data) != string(msg) || !r.beforeDone || !r.used0RTT || r.packets0RTT == 0 {
			t.Fatalf("server read %q, before handshake completion %v, Used0RTT %v, %d 0-RTT packets", r.data, r.beforeDone, r.used0RTT, r.packets0RTT)
		}
		got, err := io.ReadAll(st)
		if err != nil || string(got) != string(msg) {
			t.Fatalf("echo %q, %v", got, err)
		}
		if !c.ConnectionState().Used0RTT {
			t.Fatal("quic-go says 0-RTT was not used")
		}
		stats := tr.AddressValidationStats()
		if retries == 0 || stats.RetriesSent != retries || stats.TokensAccepted["host/new_token"] != 1 {
			t.Fatalf("stats %+v (first connection: %d Retries), want no Retry for the resumed one", stats, retries)
		}
	})
}

// TestZeroRTTRejected: a server without Allow0RTT rejects the early data
// of a ticket that allowed it; quic-go learns it, and after NextConnection
// the connection works, the server never having seen the early data.
func TestZeroRTTRejected(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		stls := serverTLS(t)
		stls.SetSessionTicketKeys([][32]byte{{1, 2, 3}})
		serverB := netip.AddrPortFrom(simServerAddr.Addr(), 8443)
		trA := s.serverTransport(nil)
		_, resA := earlyEchoServer(t, ctx, trA, &Config{Allow0RTT: true}, stls)
		trB := s.transport(serverB)
		_, resB := earlyEchoServer(t, ctx, trB, &Config{}, stls)
		qtr := s.quicGoTransport(simClientAddr(1))

		ctls, cache := resumingClientTLS(t)
		c, err := qtr.Dial(ctx, trA.Conn.LocalAddr(), ctls, &quicgo.Config{})
		if err != nil {
			t.Fatal(err)
		}
		echoOnNewStream(t, c.OpenStream, []byte("ticket allowing early data"))
		recvResult(t, ctx, resA)
		waitSignal(t, ctx, cache.put, "session ticket")
		_ = c.CloseWithError(0, "")

		// The hold keeps the client from completing the handshake (and
		// learning of the rejection) before it wrote its early data.
		hold := s.holdHandshake(serverB)
		hold.hold()
		c, err = qtr.DialEarly(ctx, trB.Conn.LocalAddr(), ctls, &quicgo.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		writeOnNewStream(t, c.OpenStream, []byte("rejected early data"))
		hold.release()
		select {
		case <-c.HandshakeComplete():
		case <-ctx.Done():
			t.Fatal("no handshake")
		}
		if c.ConnectionState().Used0RTT {
			t.Fatal("0-RTT was accepted")
		}
		if _, err := c.OpenStream(); !errors.Is(err, quicgo.Err0RTTRejected) {
			t.Fatalf("OpenStream after rejection: %v, want Err0RTTRejected", err)
		}
		c, err = c.NextConnection(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msg := []byte("after rejection")
		writeOnNewStream(t, c.OpenStream, msg)
		r := recvResult(t, ctx, resB)
		if string(r.data) != string(msg) || r.used0RTT || r.packets0RTT != 0 {
			t.Fatalf("server read %q (Used0RTT %v, %d 0-RTT packets), want only the 1-RTT data", r.data, r.used0RTT, r.packets0RTT)
		}
	})
}

// TestZeroRTTOurClient: our client resumes with DialEarly and a
// NEW_TOKEN token; its early stream data reaches the server in 0-RTT
// packets before the handshake completes, with no Retry. Against a server
// that rejects early data, as with quic-go, the early stream fails with
// Err0RTTRejected, the server never sees its data, and after
// NextConnection a new stream carries it in 1-RTT.
func TestZeroRTTOurClient(t *testing.T) {
	for _, accept := range []bool{true, false} {
		name := "accepted"
		if !accept {
			name = "rejected"
		}
		t.Run(name, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				ctx := s.ctx()
				stls := serverTLS(t)
				stls.SetSessionTicketKeys([][32]byte{{4, 5, 6}})
				av := &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: testTokenSecret}
				trA := s.serverTransport(av)
				_, resA := earlyEchoServer(t, ctx, trA, &Config{Allow0RTT: true}, stls)
				trB, resB := trA, resA
				if !accept {
					trB = &Transport{Conn: s.socket(netip.AddrPortFrom(simServerAddr.Addr(), 8443)), AddressValidation: av}
					t.Cleanup(func() { trB.Close() })
					_, resB = earlyEchoServer(t, ctx, trB, &Config{}, stls)
				}
				ctls, cache := resumingClientTLS(t)
				store := newNotifyingStore()
				conf := &Config{TokenStore: store}
				ctr := s.transport(simClientAddr(1))

				c, err := ctr.Dial(ctx, trA.Conn.LocalAddr(), ctls, conf)
				if err != nil {
					t.Fatal(err)
				}
				echoOnNewStream(t, c.OpenStream, []byte("first, full handshake"))
				recvResult(t, ctx, resA)
				waitSignal(t, ctx, cache.put, "session ticket")
				waitPut(t, ctx, store)
				_ = c.CloseWithError(0, "")
				retries := trB.AddressValidationStats().RetriesSent

				hold := s.holdHandshake(trB.Conn.(simSocket).AddrPort())
				hold.hold()
				c, err = ctr.DialEarly(ctx, trB.Conn.LocalAddr(), ctls, conf)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				select {
				case <-c.HandshakeComplete():
					t.Fatal("DialEarly waited for the handshake")
				default:
				}
				msg := []byte("early data from our client")
				st := writeOnNewStream(t, c.OpenStream, msg)
				var r earlyResult
				if accept {
					r = recvResult(t, ctx, resB)
					hold.release()
				} else {
					hold.release()
					if _, err := io.ReadAll(st); !errors.Is(err, Err0RTTRejected) {
						t.Fatalf("early stream after rejection: %v, want Err0RTTRejected", err)
					}
					if _, err := c.OpenStream(); !errors.Is(err, Err0RTTRejected) {
						t.Fatalf("OpenStream before NextConnection: %v, want Err0RTTRejected", err)
					}
					if c, err = c.NextConnection(ctx); err != nil {
						t.Fatal(err)
					}
					if st, err = c.OpenStream(); err != nil || st.StreamID() != 0 {
						t.Fatalf("stream after NextConnection: %v, %v (want ID 0 again)", st, err)
					}
					if _, err := st.Write(msg); err != nil {
						t.Fatal(err)
					}
					_ = st.Close()
					r = recvResult(t, ctx, resB)
				}
				if string(r.data) != string(msg) || r.used0RTT != accept || r.beforeDone != accept || (r.packets0RTT > 0) != accept {
					t.Fatalf("server read %q, before handshake completion %v, Used0RTT %v, %d 0-RTT packets", r.data, r.beforeDone, r.used0RTT, r.packets0RTT)
				}
				got, err := io.ReadAll(st)
				if err != nil || string(got) != string(msg) {
					t.Fatalf("echo %q, %v", got, err)
				}
				if c.ConnectionState().Used0RTT != accept {
					t.Fatalf("client Used0RTT = %v", c.ConnectionState().Used0RTT)
				}
				if accept && trB.AddressValidationStats().RetriesSent != retries {
					t.Fatal("the resumed connection was retried")
				}
			})
		})
	}
}

// quicGoEarlyServer starts quic-go's early listener at simServerAddr; it
// echoes each connection's first stream and reports there, on the
// returned channel, whether the connection used 0-RTT and completed its
// handshake.
func (s *sim) quicGoEarlyServer(ctx context.Context) (*quicgo.EarlyListener, <-chan earlyServed) {
	s.t.Helper()
	ln, err := s.quicGoTransport(simServerAddr).ListenEarly(serverTLS(s.t), &quicgo.Config{Allow0RTT: true})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { ln.Close() })
	results := make(chan earlyServed, 4)
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				st, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				data, _ := io.ReadAll(st)
				_, _ = st.Write(data)
				_ = st.Close()
				select {
				case <-c.HandshakeComplete():
					results <- earlyServed{c.ConnectionState().Used0RTT, true}
				case <-ctx.Done():
					results <- earlyServed{c.ConnectionState().Used0RTT, false}
				}
			}()
		}
	}()
	return ln, results
}

// earlyServed is what quicGoEarlyServer saw on a connection.
type earlyServed struct{ used0RTT, complete bool }

// TestZeroRTTOurClientQuicGoServer: quic-go's server accepts our client's
// 0-RTT packets.
func TestZeroRTTOurClientQuicGoServer(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		ln, results := s.quicGoEarlyServer(ctx)
		ctls, cache := resumingClientTLS(t)
		ctr := s.transport(simClientAddr(1))
		for i := range 2 {
			dial := ctr.Dial
			if i == 1 {
				dial = ctr.DialEarly
			}
			c, err := dial(ctx, ln.Addr(), ctls, nil)
			if err != nil {
				t.Fatal(err)
			}
			echoOnNewStream(t, c.OpenStream, []byte("to quic-go"))
			if r := <-results; r.used0RTT != (i == 1) {
				t.Fatalf("connection %d: quic-go Used0RTT = %v", i, r.used0RTT)
			}
			if i == 0 {
				waitSignal(t, ctx, cache.put, "session ticket")
			} else if !c.ConnectionState().Used0RTT {
				t.Fatal("our client did not use 0-RTT")
			}
			_ = c.CloseWithError(0, "")
		}
	})
}

// TestZeroRTTAfterRetry: without a NEW_TOKEN token the resumed client is
// retried; its 0-RTT packets sent before the Retry are lost with it and
// sent again, and the connection completes with 0-RTT accepted.
func TestZeroRTTAfterRetry(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		tr := s.serverTransport(&AddressValidationConfig{Policy: AlwaysRetry(), DisableNewTokens: true})
		_, results := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, serverTLS(t))
		ctls, cache := resumingClientTLS(t)
		ctr := s.transport(simClientAddr(1))
		for i := range 2 {
			dial := ctr.Dial
			if i == 1 {
				dial = ctr.DialEarly
			}
			c, err := dial(ctx, tr.Conn.LocalAddr(), ctls, nil)
			if err != nil {
				t.Fatal(err)
			}
			echoOnNewStream(t, c.OpenStream, []byte("retried"))
			r := recvResult(t, ctx, results)
			if i == 0 {
				waitSignal(t, ctx, cache.put, "session ticket")
			} else if !r.used0RTT || !c.ConnectionState().Used0RTT {
				t.Fatalf("0-RTT not used after Retry (server %v)", r.used0RTT)
			}
			_ = c.CloseWithError(0, "")
		}
		if st := tr.AddressValidationStats(); st.TokensAccepted["host/retry"] != 2 {
			t.Fatalf("stats %+v, want both connections retried", st)
		}
	})
}

// TestZeroRTTAckOf0RTTDoesNotConfirm: the server's 1-RTT packets that
// acknowledge our 0-RTT packets reach the client before the server's
// Handshake flight. An ACK of 0-RTT packets is no handshake confirmation
// (RFC 9001 4.1.2: only an acknowledged 1-RTT packet is); treating it as
// one dropped the Handshake keys before the client's Finished was sent, and
// the server never completed its handshake.
func TestZeroRTTAckOf0RTTDoesNotConfirm(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		ln, results := s.quicGoEarlyServer(ctx)
		hold := s.holdHandshake(simServerAddr)
		ctls, cache := resumingClientTLS(t)
		ctr := s.transport(simClientAddr(1))
		c, err := ctr.Dial(ctx, ln.Addr(), ctls, nil)
		if err != nil {
			t.Fatal(err)
		}
		echoOnNewStream(t, c.OpenStream, []byte("full handshake"))
		<-results
		waitSignal(t, ctx, cache.put, "session ticket")
		_ = c.CloseWithError(0, "")

		hold.hold()
		c, err = ctr.DialEarly(ctx, ln.Addr(), ctls, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		msg := testData(20_000, 3)
		st := writeOnNewStream(t, c.OpenStream, msg)
		// Wait for the server's 1-RTT packets (the ACKs of our 0-RTT
		// packets and the echo) to pass while its Handshake flight is
		// held back.
		waitFor(t, "a 1-RTT packet from the server while holding its Handshake flight", func() bool { return hold.shortPassedCount() > 0 })
		hold.release()
		got, err := io.ReadAll(st)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo: %d bytes, %v", len(got), err)
		}
		r := <-results
		if !r.used0RTT || !r.complete {
			t.Fatalf("quic-go server: Used0RTT %v, handshake complete %v", r.used0RTT, r.complete)
		}
		if !c.ConnectionState().Used0RTT {
			t.Fatal("our client did not use 0-RTT")
		}
	})
}

// Issue 15: a server whose tls.Config.WrapSession adds its own entries to
// SessionState.Extra (quic-go's tests add 5000 bytes; here also one of the
// size of our own entry) still resumes sessions and accepts 0-RTT, from
// our client and quic-go's. The WrapSession calls the application's
// config's EncryptTicket, so the server must use that config's ticket keys.
func TestResumptionWithWrapSessionExtra(t *testing.T) {
	ctx := testCtx(t)
	stls := serverTLS(t)
	stls.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		ss.Extra = append(ss.Extra, make([]byte, 5000), make([]byte, len(ticketLimitsTag)+earlyLimitsLen))
		return stls.EncryptTicket(cs, ss)
	}
	tr := &Transport{Conn: listenUDP(t)}
	defer tr.Close()
	_, res := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, stls)
	addr := tr.Conn.LocalAddr().String()
	for _, client := range []string{"ours", "quic-go"} {
		ctls, cache := resumingClientTLS(t)
		for i, msg := range []string{"full handshake", "resumed with 0-RTT"} {
			var s interface {
				Write([]byte) (int, error)
				Close() error
			}
			var state func() (bool, bool)
			dialAddr := addr
			if i == 1 {
				// The relay holds the server's flight until the
				// client's 0-RTT packet passes: without it, a stall
				// between the dial and the Write lets the handshake
				// complete first and the data go in 1-RTT.
				relay := newVersionRelay(t, tr.Conn.LocalAddr())
				relay.holdUntilEarlyData()
				dialAddr = relay.down.LocalAddr().String()
			}
			switch client {
			case "ours":
				c, err := DialAddrEarly(ctx, dialAddr, ctls, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
				state = func() (bool, bool) {
					<-c.HandshakeComplete()
					st := c.ConnectionState()
					return st.TLS.DidResume, st.Used0RTT
				}
			default:
				c, err := quicgo.DialAddrEarly(ctx, dialAddr, ctls, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseWithError(0, "")
				if s, err = c.OpenStream(); err != nil {
					t.Fatal(err)
				}
				state = func() (bool, bool) {
					<-c.HandshakeComplete()
					st := c.ConnectionState()
					return st.TLS.DidResume, st.Used0RTT
				}
			}
			if _, err := s.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			r := recvResult(t, ctx, res)
			resumed, used0RTT := state()
			if want := i == 1; resumed != want || used0RTT != want || r.used0RTT != want || (r.packets0RTT > 0) != want {
				t.Fatalf("%s client, connection %d: resumed %v, Used0RTT %v (server %v, %d 0-RTT packets)", client, i, resumed, used0RTT, r.used0RTT, r.packets0RTT)
			}
			if i == 0 {
				waitSignal(t, ctx, cache.put, "session ticket")
			}
		}
	}
}

// TestZeroRTTAheadOfInitial: quic-go's client resumes with 0-RTT data
// while the network holds its Initials back by 10 ms, so its 0-RTT
// datagrams reach our server before the Initial that creates the
// connection. The server keeps them (earlyQueue) and reads them once the
// connection exists: every 0-RTT datagram sent is used, none is dropped
// as for an unknown connection, and the data is read before the
// handshake completes.
func TestZeroRTTAheadOfInitial(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		tr := s.serverTransport(nil)
		_, res := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, serverTLS(t))
		ctr := s.quicGoTransport(simClientAddr(1))
		ctls, cache := resumingClientTLS(t)
		c, err := ctr.Dial(ctx, tr.Conn.LocalAddr(), ctls, &quicgo.Config{})
		if err != nil {
			t.Fatal(err)
		}
		fst, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fst.Write([]byte("first, full handshake"))
		_ = fst.Close()
		if _, err := io.ReadAll(fst); err != nil {
			t.Fatal(err)
		}
		recvResult(t, ctx, res)
		waitSignal(t, ctx, cache.put, "session ticket")
		_ = c.CloseWithError(0, "")

		var mu sync.Mutex
		delaying, early := true, 0
		s.tap(func(p *simnet.Packet) bool {
			if p.To != simServerAddr || p.Data[0]&0x80 == 0 {
				return true
			}
			mu.Lock()
			defer mu.Unlock()
			var hdr wire.LongHeader
			if !delaying || wire.ParseLongHeader(p.Data, &hdr) != nil {
				return true
			}
			switch hdr.Type {
			case wire.PacketTypeInitial:
				s.net.Inject(*p, simLink.Delay+10*time.Millisecond)
				return false
			case wire.PacketType0RTT:
				early++
			}
			return true
		})
		msg := bytes.Repeat([]byte("early data ahead of its Initial "), 200) // several packets
		ec, err := ctr.DialEarly(ctx, tr.Conn.LocalAddr(), ctls, &quicgo.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer ec.CloseWithError(0, "")
		writeOnNewStream(t, ec.OpenStream, msg)
		r := recvResult(t, ctx, res)
		mu.Lock()
		delaying = false
		sentEarly := early
		mu.Unlock()
		if !bytes.Equal(r.data, msg) || !r.used0RTT || !r.beforeDone {
			t.Fatalf("server read %d bytes (want %d), Used0RTT %v, before handshake completion %v", len(r.data), len(msg), r.used0RTT, r.beforeDone)
		}
		if sentEarly < 3 || r.packets0RTT < uint64(sentEarly) {
			t.Errorf("the server read %d 0-RTT packets of the %d datagrams that came ahead of the Initial", r.packets0RTT, sentEarly)
		}
		if d := tr.Stats().DatagramsDropped[DropUnknownConnection.String()]; d != 0 {
			t.Errorf("%d datagrams dropped as for an unknown connection", d)
		}
	})
}

// resumingClientTLS is clientTLS with a session cache that signals each
// ticket it stores, for a client that resumes.
func resumingClientTLS(t *testing.T) (*tls.Config, *notifyingSessionCache) {
	ctls := clientTLS(t)
	cache := newNotifyingSessionCache()
	ctls.ClientSessionCache = cache
	return ctls, cache
}

// echoOnNewStream opens a stream with open (ours or quic-go's OpenStream)
// and echoes msg on it (echoCheck).
func echoOnNewStream[S rwStream](t *testing.T, open func() (S, error), msg []byte) {
	t.Helper()
	st, err := open()
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, st, msg)
}

// writeOnNewStream opens a stream with open, writes msg and closes the
// stream's send side; it returns the stream, to read the echo.
func writeOnNewStream[S io.WriteCloser](t *testing.T, open func() (S, error), msg []byte) S {
	t.Helper()
	st, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	return st
}
