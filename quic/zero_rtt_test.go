package quic

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/wire"
)

// holdRelay relays between one client and a server and, while holding,
// keeps back the server's datagrams that carry a Handshake packet. The
// client then cannot complete the handshake, so whatever it sends is 0-RTT,
// and the server cannot complete it either (it needs the client's Finished).
type holdRelay struct {
	down, up *net.UDPConn

	mu      sync.Mutex
	client  net.Addr
	holding bool
	held    [][]byte
	// shortPassed counts the server's short-header (1-RTT) datagrams
	// passed on while holding.
	shortPassed int
}

func newHoldRelay(t *testing.T, server net.Addr) *holdRelay {
	r := &holdRelay{down: listenUDP(t), up: listenUDP(t)}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := r.down.ReadFrom(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.client = from
			r.mu.Unlock()
			_, _ = r.up.WriteTo(buf[:n], server)
		}
	}()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := r.up.ReadFrom(buf)
			if err != nil {
				return
			}
			pkt := append([]byte(nil), buf[:n]...)
			r.mu.Lock()
			c := r.client
			hold := r.holding && hasHandshakePacket(pkt)
			if hold {
				r.held = append(r.held, pkt)
			} else if r.holding && len(pkt) > 0 && pkt[0]&0x80 == 0 {
				r.shortPassed++
			}
			r.mu.Unlock()
			if c != nil && !hold {
				_, _ = r.down.WriteTo(pkt, c)
			}
		}
	}()
	return r
}

func (r *holdRelay) hold() {
	r.mu.Lock()
	r.holding = true
	r.mu.Unlock()
}

func (r *holdRelay) release() {
	r.mu.Lock()
	r.holding = false
	held, c := r.held, r.client
	r.held = nil
	r.mu.Unlock()
	for _, p := range held {
		_, _ = r.down.WriteTo(p, c)
	}
}

func (r *holdRelay) shortPassedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shortPassed
}

func hasHandshakePacket(d []byte) bool {
	for pkt, err := range wire.CoalescedPackets(d) {
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
				r.packets0RTT = c.packets0RTT
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

// TestZeroRTTWithNewToken: quic-go resumes with a NEW_TOKEN token and a
// session ticket to an AlwaysRetry server. It skips the Retry, its 0-RTT
// stream data is accepted, and the server reads it while the server's
// Handshake packets are still held back (before handshake completion).
func TestZeroRTTWithNewToken(t *testing.T) {
	ctx := testCtx(t)
	tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{Policy: AlwaysRetry()}}
	defer tr.Close()
	_, results := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, serverTLS(t))
	relay := newHoldRelay(t, tr.Conn.LocalAddr())
	ctls := clientTLS(t)
	cache := newNotifyingSessionCache()
	ctls.ClientSessionCache = cache
	store := &notifyingQuicGoStore{TokenStore: quicgo.NewLRUTokenStore(4, 4), put: make(chan struct{}, 16)}
	qconf := &quicgo.Config{TokenStore: store}

	c, err := quicgo.DialAddr(ctx, relay.down.LocalAddr().String(), ctls, qconf)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("first, full handshake"))
	recvResult(t, ctx, results)
	// Under load the packet with the ticket or the token may be lost and
	// come after the echo: wait for both.
	waitSignal(t, ctx, cache.put, "session ticket")
	waitSignal(t, ctx, store.put, "NEW_TOKEN token")
	_ = c.CloseWithError(0, "")
	retries := tr.AddressValidationStats().RetriesSent

	relay.hold()
	c, err = quicgo.DialAddrEarly(ctx, relay.down.LocalAddr().String(), ctls, qconf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err = c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("early data")
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	r := recvResult(t, ctx, results)
	relay.release()
	if string(r.data) != string(msg) || !r.beforeDone || !r.used0RTT || r.packets0RTT == 0 {
		t.Fatalf("server read %q, before handshake completion %v, Used0RTT %v, %d 0-RTT packets", r.data, r.beforeDone, r.used0RTT, r.packets0RTT)
	}
	got, err := io.ReadAll(s)
	if err != nil || string(got) != string(msg) {
		t.Fatalf("echo %q, %v", got, err)
	}
	if !c.ConnectionState().Used0RTT {
		t.Fatal("quic-go says 0-RTT was not used")
	}
	st := tr.AddressValidationStats()
	if retries == 0 || st.RetriesSent != retries || st.TokensAccepted["host/new_token"] != 1 {
		t.Fatalf("stats %+v (first connection: %d Retries), want no Retry for the resumed one", st, retries)
	}
}

// TestZeroRTTRejected: a server without Allow0RTT rejects the early data
// of a ticket that allowed it; quic-go learns it, and after NextConnection
// the connection works, the server never having seen the early data.
func TestZeroRTTRejected(t *testing.T) {
	ctx := testCtx(t)
	stls := serverTLS(t)
	stls.SetSessionTicketKeys([][32]byte{{1, 2, 3}})
	trA := &Transport{Conn: listenUDP(t)}
	defer trA.Close()
	_, resA := earlyEchoServer(t, ctx, trA, &Config{Allow0RTT: true}, stls)
	trB := &Transport{Conn: listenUDP(t)}
	defer trB.Close()
	_, resB := earlyEchoServer(t, ctx, trB, &Config{}, stls)

	ctls := clientTLS(t)
	cache := newNotifyingSessionCache()
	ctls.ClientSessionCache = cache
	c, err := quicgo.DialAddr(ctx, trA.Conn.LocalAddr().String(), ctls, &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("ticket allowing early data"))
	recvResult(t, ctx, resA)
	waitSignal(t, ctx, cache.put, "session ticket")
	_ = c.CloseWithError(0, "")

	// The relay keeps the client from completing the handshake (and
	// learning of the rejection) before it wrote its early data.
	relay := newHoldRelay(t, trB.Conn.LocalAddr())
	relay.hold()
	c, err = quicgo.DialAddrEarly(ctx, relay.down.LocalAddr().String(), ctls, &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err = c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("rejected early data")); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	relay.release()
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
	s, err = c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("after rejection")
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	r := recvResult(t, ctx, resB)
	if string(r.data) != string(msg) || r.used0RTT || r.packets0RTT != 0 {
		t.Fatalf("server read %q (Used0RTT %v, %d 0-RTT packets), want only the 1-RTT data", r.data, r.used0RTT, r.packets0RTT)
	}
}

// TestZeroRTTOurClient: our client resumes with DialAddrEarly and a
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
			ctx := testCtx(t)
			stls := serverTLS(t)
			stls.SetSessionTicketKeys([][32]byte{{4, 5, 6}})
			av := &AddressValidationConfig{Policy: AlwaysRetry(), TokenSecret: testTokenSecret}
			trA := &Transport{Conn: listenUDP(t), AddressValidation: av}
			defer trA.Close()
			_, resA := earlyEchoServer(t, ctx, trA, &Config{Allow0RTT: true}, stls)
			trB := trA
			resB := resA
			if !accept {
				trB = &Transport{Conn: listenUDP(t), AddressValidation: av}
				defer trB.Close()
				_, resB = earlyEchoServer(t, ctx, trB, &Config{}, stls)
			}
			ctls := clientTLS(t)
			cache := newNotifyingSessionCache()
			ctls.ClientSessionCache = cache
			store := newNotifyingStore()
			conf := &Config{TokenStore: store}

			c, err := DialAddr(ctx, trA.Conn.LocalAddr().String(), ctls, conf)
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			echoCheck(t, s, []byte("first, full handshake"))
			recvResult(t, ctx, resA)
			waitSignal(t, ctx, cache.put, "session ticket")
			waitPut(t, ctx, store)
			_ = c.CloseWithError(0, "")
			retries := trB.AddressValidationStats().RetriesSent

			relay := newHoldRelay(t, trB.Conn.LocalAddr())
			relay.hold()
			c, err = DialAddrEarly(ctx, relay.down.LocalAddr().String(), ctls, conf)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			select {
			case <-c.HandshakeComplete():
				t.Fatal("DialAddrEarly waited for the handshake")
			default:
			}
			s, err = c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			msg := []byte("early data from our client")
			if _, err := s.Write(msg); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			var r earlyResult
			if accept {
				r = recvResult(t, ctx, resB)
				relay.release()
			} else {
				relay.release()
				if _, err := io.ReadAll(s); !errors.Is(err, Err0RTTRejected) {
					t.Fatalf("early stream after rejection: %v, want Err0RTTRejected", err)
				}
				if _, err := c.OpenStream(); !errors.Is(err, Err0RTTRejected) {
					t.Fatalf("OpenStream before NextConnection: %v, want Err0RTTRejected", err)
				}
				if c, err = c.NextConnection(ctx); err != nil {
					t.Fatal(err)
				}
				if s, err = c.OpenStream(); err != nil || s.StreamID() != 0 {
					t.Fatalf("stream after NextConnection: %v, %v (want ID 0 again)", s, err)
				}
				if _, err := s.Write(msg); err != nil {
					t.Fatal(err)
				}
				_ = s.Close()
				r = recvResult(t, ctx, resB)
			}
			if string(r.data) != string(msg) || r.used0RTT != accept || r.beforeDone != accept || (r.packets0RTT > 0) != accept {
				t.Fatalf("server read %q, before handshake completion %v, Used0RTT %v, %d 0-RTT packets", r.data, r.beforeDone, r.used0RTT, r.packets0RTT)
			}
			got, err := io.ReadAll(s)
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
	}
}

// TestZeroRTTOurClientQuicGoServer: quic-go's server accepts our client's
// 0-RTT packets.
func TestZeroRTTOurClientQuicGoServer(t *testing.T) {
	ctx := testCtx(t)
	ln, err := quicgo.ListenAddrEarly("127.0.0.1:0", serverTLS(t), &quicgo.Config{Allow0RTT: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	used := make(chan bool, 4)
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				s, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				data, _ := io.ReadAll(s)
				used <- c.ConnectionState().Used0RTT
				_, _ = s.Write(data)
				_ = s.Close()
			}()
		}
	}()
	ctls := clientTLS(t)
	cache := newNotifyingSessionCache()
	ctls.ClientSessionCache = cache
	for i := range 2 {
		dial := DialAddr
		if i == 1 {
			dial = DialAddrEarly
		}
		c, err := dial(ctx, ln.Addr().String(), ctls, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		echoCheck(t, s, []byte("to quic-go"))
		if got := <-used; got != (i == 1) {
			t.Fatalf("connection %d: quic-go Used0RTT = %v", i, got)
		}
		if i == 0 {
			waitSignal(t, ctx, cache.put, "session ticket")
		} else if !c.ConnectionState().Used0RTT {
			t.Fatal("our client did not use 0-RTT")
		}
		_ = c.CloseWithError(0, "")
	}
}

// TestZeroRTTAfterRetry: without a NEW_TOKEN token the resumed client is
// retried; its 0-RTT packets sent before the Retry are lost with it and
// sent again, and the connection completes with 0-RTT accepted.
func TestZeroRTTAfterRetry(t *testing.T) {
	ctx := testCtx(t)
	tr := &Transport{Conn: listenUDP(t), AddressValidation: &AddressValidationConfig{Policy: AlwaysRetry(), DisableNewTokens: true}}
	defer tr.Close()
	_, results := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, serverTLS(t))
	ctls := clientTLS(t)
	cache := newNotifyingSessionCache()
	ctls.ClientSessionCache = cache
	for i := range 2 {
		dial := DialAddr
		if i == 1 {
			dial = DialAddrEarly
		}
		c, err := dial(ctx, tr.Conn.LocalAddr().String(), ctls, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		echoCheck(t, s, []byte("retried"))
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
}

// TestZeroRTTAckOf0RTTDoesNotConfirm: the server's 1-RTT packets that
// acknowledge our 0-RTT packets reach the client before the server's
// Handshake flight. An ACK of 0-RTT packets is no handshake confirmation
// (RFC 9001 4.1.2: only an acknowledged 1-RTT packet is); treating it as
// one dropped the Handshake keys before the client's Finished was sent, and
// the server never completed its handshake.
func TestZeroRTTAckOf0RTTDoesNotConfirm(t *testing.T) {
	ctx := testCtx(t)
	ln, err := quicgo.ListenAddrEarly("127.0.0.1:0", serverTLS(t), &quicgo.Config{Allow0RTT: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type served struct {
		used0RTT, complete bool
	}
	results := make(chan served, 2)
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				s, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				data, _ := io.ReadAll(s)
				_, _ = s.Write(data)
				_ = s.Close()
				select {
				case <-c.HandshakeComplete():
					results <- served{c.ConnectionState().Used0RTT, true}
				case <-ctx.Done():
					results <- served{c.ConnectionState().Used0RTT, false}
				}
			}()
		}
	}()
	ctls := clientTLS(t)
	cache := newNotifyingSessionCache()
	ctls.ClientSessionCache = cache
	c, err := DialAddr(ctx, ln.Addr().String(), ctls, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	echoCheck(t, s, []byte("full handshake"))
	<-results
	waitSignal(t, ctx, cache.put, "session ticket")
	_ = c.CloseWithError(0, "")

	relay := newHoldRelay(t, ln.Addr())
	relay.hold()
	c, err = DialAddrEarly(ctx, relay.down.LocalAddr().String(), ctls, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err = c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	msg := testData(20_000, 3)
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	// Wait for the server's 1-RTT packets (the ACKs of our 0-RTT packets
	// and the echo) to pass while its Handshake flight is held back.
	for relay.shortPassedCount() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no 1-RTT packet from the server while holding its Handshake flight")
		case <-afterMs(5):
		}
	}
	relay.release()
	got, err := io.ReadAll(s)
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
		ctls := clientTLS(t)
		cache := newNotifyingSessionCache()
		ctls.ClientSessionCache = cache
		for i, msg := range []string{"full handshake", "resumed with 0-RTT"} {
			var s interface {
				Write([]byte) (int, error)
				Close() error
			}
			var state func() (bool, bool)
			switch client {
			case "ours":
				c, err := DialAddrEarly(ctx, addr, ctls, nil)
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
				c, err := quicgo.DialAddrEarly(ctx, addr, ctls, nil)
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
