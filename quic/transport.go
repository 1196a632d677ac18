package quic

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/udpio"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlogwriter"
)

// defaultConnIDLength is used when Transport.ConnectionIDLength is 0 on a
// transport shared by several connections.
const defaultConnIDLength = 4

// Transport owns a UDP socket and demultiplexes its datagrams by
// destination connection ID to the connections on it. One Transport can
// serve a listener and dial at the same time.
type Transport struct {
	// Conn is the socket. Close does not close it unless the Transport was
	// created by ListenAddr or DialAddr.
	Conn net.PacketConn

	// ConnectionIDLength is the length of our connection IDs. 0 means 4,
	// except for the single connection of DialAddr and Dial, which uses none.
	ConnectionIDLength int

	// ConnectionIDGenerator, when set, makes every connection ID the
	// Transport issues, and its ConnectionIDLen replaces
	// ConnectionIDLength (connection_id_generator.go).
	ConnectionIDGenerator ConnectionIDGenerator

	// StatelessResetKey, when set, derives the stateless reset tokens of our
	// connection IDs: a server announces its token in the transport
	// parameters, and short-header packets for unknown connection IDs are
	// answered with a stateless reset (RFC 9000 section 10.3).
	StatelessResetKey *StatelessResetKey

	// AddressValidation, when set before Listen, turns on server-side
	// address validation with universal tokens: an AddressPolicy decides
	// on every client Initial (accept, Retry or drop), Retries carry host
	// tokens, retry tokens from offload agents are accepted after
	// revalidation, and clients get NEW_TOKEN tokens. Nil behaves as
	// quic-go: no Retry unless VerifySourceAddress asks for one, NEW_TOKEN
	// tokens from TokenGeneratorKey (else a random key) accepted up to
	// MaxTokenAge.
	AddressValidation *AddressValidationConfig

	// ConnectionIDAdded, when set, is called with every connection ID the
	// Transport starts routing to one of its connections: our handshake
	// SCIDs and the IDs we issue later, and a client's first DCID while its
	// Initials may still arrive. An offload fast path admits them (the
	// integrated XDP mode) so packets to them are never dropped. It runs on
	// a connection's goroutine (for a new connection's first IDs, the one
	// that creates it) without any lock of ours held, before the ID is
	// announced to the peer: it must not block, and must not keep cid.
	ConnectionIDAdded func(cid []byte)

	// MaxSendBuffer bounds the stream data all the Transport's
	// connections hold for sending (written, not yet acknowledged); a
	// Write beyond it waits until acknowledgements free room. Default
	// 256 MiB. It and MaxReceiveBuffer are read when the Transport starts
	// (its first Listen or Dial). See docs/api.md "Limits".
	MaxSendBuffer uint64
	// MaxReceiveBuffer bounds how far receive windows grow: while the
	// memory that stream receive buffers hold (bytes of data received and
	// not yet read, in order or not, with their bookkeeping), over all the
	// Transport's connections, exceeds it, no connection's or stream's
	// window grows beyond its current size (credit for data read is still
	// given back). Default 256 MiB.
	MaxReceiveBuffer uint64
	// MaxReceiveMemory is the hard limit on that memory: while it is
	// exceeded, the connection holding the most out-of-order stream data
	// (data beyond a gap, at least 64 KiB of it) is closed with
	// INTERNAL_ERROR, one at a time, and its buffers freed at once
	// (counted in TransportStats.ClosedByLimit as "receive_memory").
	// Connections holding data in order are left alone: their windows
	// promised it. Read when the Transport starts. Default twice
	// MaxReceiveBuffer.
	MaxReceiveMemory uint64

	// VerifySourceAddress, as in quic-go, decides for each client Initial
	// without a valid token whether the client must first prove its
	// address with a Retry; it is the VerifySourceAddress AddressPolicy of
	// a default address validation (used when AddressValidation is nil).
	VerifySourceAddress func(net.Addr) bool
	// TokenGeneratorKey, when set, is the 32-byte secret of the Retry and
	// NEW_TOKEN tokens of the default address validation (used when
	// AddressValidation is nil); servers that share it accept each
	// other's tokens. Nil: a random key.
	TokenGeneratorKey *TokenGeneratorKey
	// MaxTokenAge bounds the age of NEW_TOKEN tokens the default address
	// validation accepts (quic-go's name for NewTokenMaxAge). 0: 24 hours.
	MaxTokenAge time.Duration
	// DisableVersionNegotiationPackets stops a server from answering
	// unknown versions with Version Negotiation.
	DisableVersionNegotiationPackets bool
	// ConnContext (server), when set, is called for every connection
	// attempt before its handshake; the connection's context (Conn.Context,
	// the stream contexts, the TLS ClientHelloInfo's and Config.Tracer's)
	// derives from the one it returns. An error refuses the attempt with
	// CONNECTION_REFUSED. It runs on the receive goroutine: it must not
	// block.
	ConnContext func(context.Context, *ClientInfo) (context.Context, error)

	// Tracer, when set, records the events that belong to no single
	// connection (datagrams dropped, Version Negotiation sent), as in
	// quic-go; Close closes it, after the events being recorded. Its
	// RecordEvent runs without any lock of ours held; it must not call
	// Close.
	Tracer qlogwriter.Recorder

	initOnce sync.Once
	tracer   transportTracer
	nonQUICQ nonQUICQueue
	initErr  error
	cidLen   int
	cidGen   *connid.Generator
	// randomResetKey derives the reset tokens of the IDs we issue when
	// StatelessResetKey is unset: every NEW_CONNECTION_ID frame carries
	// one, though no stateless reset is ever sent with it.
	randomResetKey [32]byte

	mu       sync.Mutex
	handlers map[string]*Conn
	// resetTokens routes stateless resets, which carry no connection ID of
	// ours, to the connection whose peer issued the token.
	resetTokens map[[16]byte]*Conn
	server      *baseServer
	avMetrics   *avMetrics // the listener's address-validation counters
	closed      bool
	closeErr    error // set with closed (closedErr)
	closedCh    chan struct{}
	readDone    chan struct{}
	conns       sync.WaitGroup
	// inCallbacks counts the goroutines in an application callback now
	// (appCalls): the receive goroutine, a connection's. Close made from
	// one must not wait for that goroutine, itself.
	inCallbacks atomic.Int32
	// live is the connections started and not ended: Close wakes them,
	// since a parked one has no goroutine watching closedCh.
	live map[*Conn]struct{}

	sendBatches  sync.Pool    // *sendBatch, shared by the connections' writes
	sendBudget   sendBudget   // MaxSendBuffer
	recvBuffered atomic.Int64 // bytes stream receive buffers hold, all connections
	maxRecvBuf   int64        // MaxReceiveBuffer with the default applied
	// recvOutOfOrder is the part of recvBuffered beyond the streams'
	// first gaps; recvShedding: a connection was asked to close for
	// MaxReceiveMemory (maxRecvMemory) and has not yet (recv_memory.go).
	recvOutOfOrder atomic.Int64
	maxRecvMemory  int64
	recvShedding   atomic.Bool
	// recvShedRescanAt: the out-of-order total from which the next look
	// for a connection to shed is worth taking (shedReceiveMemory).
	recvShedRescanAt atomic.Int64
	counters         transportCounters

	gso bool // the socket takes UDP GSO sends
	gro bool // reads may return UDP GRO buffers of several datagrams
	df  bool // datagrams leave unfragmented: path MTU probes are meaningful
	ecn bool // received datagrams report their ECN codepoint: we may mark ours

	createdConn bool // Close closes Conn
	isSingleUse bool // Close once the only listener or connection is done
	singleDial  bool // DialAddr/Dial: one client connection, zero-length CIDs by default
}

func (t *Transport) init() error { return t.initWithCIDLen(-1) }

// initWithCIDLen is init for a Transport that a connection adds as a path:
// unless ConnectionIDLength says otherwise, it takes the connection's ID
// length (cidLen >= 0) if it was not initialized yet.
func (t *Transport) initWithCIDLen(cidLen int) error {
	t.initOnce.Do(func() {
		t.tracer.r = t.Tracer
		if t.Conn == nil {
			t.initErr = errors.New("quic: Transport.Conn is nil")
			return
		}
		switch {
		case t.ConnectionIDGenerator != nil:
			t.cidGen, t.cidLen, t.initErr = appConnIDGenerator(t.ConnectionIDGenerator)
			if t.initErr != nil {
				return
			}
		case t.ConnectionIDLength < 0 || t.ConnectionIDLength > wire.MaxConnIDLen:
			t.initErr = errors.New("quic: invalid ConnectionIDLength")
			return
		case t.ConnectionIDLength > 0:
			t.cidLen = t.ConnectionIDLength
		case cidLen >= 0:
			t.cidLen = cidLen
		case !t.singleDial:
			t.cidLen = defaultConnIDLength
		}
		if t.cidGen == nil {
			if t.cidGen, t.initErr = connid.NewGenerator(t.cidLen); t.initErr != nil {
				return
			}
		}
		_, _ = rand.Read(t.randomResetKey[:])
		t.sendBudget.max = budgetOrDefault(t.MaxSendBuffer, defaultTransportSendBuffer)
		t.maxRecvBuf = budgetOrDefault(t.MaxReceiveBuffer, defaultTransportRecvBuffer)
		t.maxRecvMemory = budgetOrDefault(t.MaxReceiveMemory, recvMemoryHardFactor*uint64(t.maxRecvBuf))
		if uc, ok := t.Conn.(*net.UDPConn); ok {
			// Large buffers, GSO and GRO.
			if caps, err := udpio.Setup(uc, udpio.Config{}); err == nil {
				t.gso, t.gro, t.df, t.ecn = caps.GSO, caps.GRO, caps.DontFragment, caps.ECN
			}
		} else if d, ok := t.Conn.(dontFragmenter); ok {
			t.df = d.dontFragment()
		}
		t.handlers = make(map[string]*Conn)
		t.resetTokens = make(map[[16]byte]*Conn)
		t.closedCh = make(chan struct{})
		t.readDone = make(chan struct{})
		go t.readLoop()
	})
	return t.initErr
}

// dontFragmenter is a socket other than a *net.UDPConn whose datagrams are
// never fragmented (the tests' simulated network): path MTU discovery runs
// on it.
type dontFragmenter interface{ dontFragment() bool }

func (t *Transport) readLoop() {
	defer close(t.readDone)
	if uc, ok := t.Conn.(*net.UDPConn); ok {
		if r, err := udpio.NewReader(uc, readBatch); err == nil {
			t.readBatches(r)
			return
		}
	}
	var retry readRetry
	for {
		b := getBuffer()
		n, addr, err := t.Conn.ReadFrom(*b)
		if err != nil {
			putBuffer(b)
			if t.readFailed(err, &retry) {
				return
			}
			continue
		}
		retry.failures = 0
		t.handleDatagram(receivedPacket{buf: b, data: (*b)[:n], remote: addr, rcvTime: time.Now()})
	}
}

// readBatch is how many datagrams one recvmmsg call may return, and
// groReadBatch how many GRO buffers.
const (
	readBatch    = 32
	groReadBatch = 8
	// singleDialGROBatch is groReadBatch for the Transport of DialAddr
	// and Dial, which serves one connection.
	singleDialGROBatch = 2
)

// readBatches is readLoop with recvmmsg (internal/udpio).
func (t *Transport) readBatches(r *udpio.Reader) {
	if t.gro {
		t.readGROBatches(r)
		return
	}
	msgs := make([]udpio.Message, readBatch)
	bufs := make([]*[]byte, readBatch)
	for i := range msgs {
		bufs[i] = getBuffer()
		msgs[i].Buf = *bufs[i]
	}
	defer func() {
		for _, b := range bufs {
			putBuffer(b)
		}
	}()
	var retry readRetry
	for {
		n, err := r.ReadBatch(msgs)
		if err != nil {
			if t.readFailed(err, &retry) {
				return
			}
			continue
		}
		retry.failures = 0
		now := time.Now()
		for i := range n {
			m := &msgs[i]
			if m.Truncated || m.N == 0 {
				continue
			}
			t.handleDatagram(receivedPacket{buf: bufs[i], data: (*bufs[i])[:m.N], addrPort: m.Addr, rcvTime: now, ecn: m.ECN, local: m.Local.Unmap()})
			bufs[i] = getBuffer()
			m.Buf = *bufs[i]
		}
	}
}

// readGROBatches reads into GRO-sized buffers and copies each datagram of
// a coalesced buffer into its own packet buffer.
func (t *Transport) readGROBatches(r *udpio.Reader) {
	// A GRO buffer holds up to 64 KiB: fewer of them keep a Transport at
	// half a MiB, and a single dialed connection's at 128 KiB (one
	// buffer already holds 45 full-size datagrams).
	batch := groReadBatch
	if t.singleDial {
		batch = singleDialGROBatch
	}
	msgs := make([]udpio.Message, batch)
	for i := range msgs {
		msgs[i].Buf = make([]byte, udpio.GROBufferSize)
	}
	var dgrams [][]byte
	var retry readRetry
	for {
		n, err := r.ReadBatch(msgs)
		if err != nil {
			if t.readFailed(err, &retry) {
				return
			}
			continue
		}
		retry.failures = 0
		now := time.Now()
		for i := range n {
			m := &msgs[i]
			if m.Truncated || m.N == 0 {
				continue
			}
			dgrams = m.Datagrams(dgrams[:0])
			for _, d := range dgrams {
				if len(d) == 0 || len(d) > receiveBufferSize {
					continue
				}
				b := getBuffer()
				k := copy(*b, d)
				t.handleDatagram(receivedPacket{buf: b, data: (*b)[:k], addrPort: m.Addr, rcvTime: now, ecn: m.ECN, local: m.Local.Unmap()})
			}
		}
		clear(dgrams)
	}
}

func (t *Transport) handleDatagram(p receivedPacket) {
	// A panic here would be a bug in a parser; it costs the datagram (its
	// buffer is left to the garbage collector), not the process, and is
	// logged and counted.
	defer func() {
		if r := recover(); r != nil {
			t.countDropped(DropPanic, len(p.data))
			t.recoveredPanic("receive", r)
		}
	}()
	if isNonQUIC(p.data) {
		t.handleNonQUIC(p)
		return
	}
	dcid, err := wire.ParseDestConnID(p.data, t.cidLen)
	if err != nil {
		t.countDropped(DropMalformed, len(p.data))
		putBuffer(p.buf)
		return
	}
	t.mu.Lock()
	c := t.handlers[string(dcid)]
	if c == nil && !wire.IsLongHeader(p.data[0]) && len(p.data) >= connid.MinStatelessResetSize {
		c = t.resetTokens[[16]byte(p.data[len(p.data)-16:])]
	}
	srv := t.server
	t.mu.Unlock()
	if c != nil {
		p.via = t
		c.deliver(p)
		return
	}
	if srv != nil && wire.IsLongHeader(p.data[0]) {
		srv.handleUnknownLongHeader(p)
		return
	}
	t.countDropped(DropUnknownConnection, len(p.data))
	if !wire.IsLongHeader(p.data[0]) {
		t.maybeSendStatelessReset(&p)
	}
	putBuffer(p.buf)
}

// write sends one datagram. Connections act on its error (writeDatagrams);
// for the stateless answers of the Transport a failure is a lost datagram.
func (t *Transport) write(b []byte, addr net.Addr) error {
	_, err := t.writeTo(b, addr)
	return err
}

// appendConnID appends a connection ID of our length not in use to dst,
// from the Transport's generator; should that fail (or a Transport never
// initialized have none: tests), a random one. With room in dst it does
// not allocate, but for the random one.
func (t *Transport) appendConnID(dst []byte) []byte {
	for {
		b := dst
		if t.cidGen != nil {
			if c, err := t.cidGen.New(); err == nil {
				b = c.AppendTo(dst)
			}
		}
		if len(b) == len(dst) && t.cidLen > 0 {
			// A fresh slice: crypto/rand.Read would make dst escape.
			r := make([]byte, t.cidLen)
			_, _ = rand.Read(r)
			b = append(dst, r...)
		}
		t.mu.Lock()
		_, used := t.handlers[string(b[len(dst):])]
		t.mu.Unlock()
		if !used || t.cidLen == 0 {
			return b
		}
	}
}

// addHandler routes datagrams for cid to c; false if the Transport closed
// or the ID is taken. The caller queues the ConnectionIDAdded call
// (callbackOutbox.routed).
func (t *Transport) addHandler(cid []byte, c *Conn) bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	if _, ok := t.handlers[string(cid)]; ok {
		t.mu.Unlock()
		return false
	}
	t.handlers[string(cid)] = c
	t.mu.Unlock()
	// ConnectionIDAdded is the connection's to call, without its lock
	// (callbackOutbox.routed).
	return true
}

// removeHandler stops routing cid, if it is routed to c.
func (t *Transport) removeHandler(cid []byte, c *Conn) {
	t.mu.Lock()
	if t.handlers[string(cid)] == c {
		delete(t.handlers, string(cid))
	}
	t.mu.Unlock()
}

func (t *Transport) removeHandlers(c *Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, h := range t.handlers {
		if h == c {
			delete(t.handlers, k)
		}
	}
	for k, h := range t.resetTokens {
		if h == c {
			delete(t.resetTokens, k)
		}
	}
}

// removeResetToken stops routing token, if it is routed to c.
func (t *Transport) removeResetToken(token [16]byte, c *Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resetTokens[token] == c {
		delete(t.resetTokens, token)
	}
}

func (t *Transport) addResetToken(token [16]byte, c *Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resetTokens != nil {
		t.resetTokens[token] = c
	}
}

// startConn runs c's goroutine, tracked so Close can wait for it. On a
// Transport that closed meanwhile (its socket failed) c ends at once with
// the Transport's error: Close may be waiting for the connections already,
// and the WaitGroup takes no Add once Wait runs.
func (t *Transport) startConn(c *Conn) {
	t.mu.Lock()
	closed := t.closed
	if !closed {
		t.conns.Add(1)
		if t.live == nil {
			t.live = make(map[*Conn]struct{})
		}
		t.live[c] = struct{}{}
	}
	t.mu.Unlock()
	if closed {
		c.endUnstarted(t.closedErr())
		return
	}
	go c.run()
}

// connEnded is called by the goroutine of a connection startConn started
// when the connection ended (not when the goroutine parks), before
// connDone.
func (t *Transport) connEnded(c *Conn) {
	t.mu.Lock()
	delete(t.live, c)
	t.mu.Unlock()
	t.conns.Done()
}

// connDone is called when a connection ended.
func (t *Transport) connDone(*Conn) {
	if t.isSingleUse {
		t.mu.Lock()
		idle := len(t.handlers) == 0 && t.server == nil
		t.mu.Unlock()
		if idle {
			t.close(false)
		}
	}
}

// localResetKey is the key of the reset tokens of the IDs we issue.
func (t *Transport) localResetKey() [32]byte {
	if k := t.StatelessResetKey; k != nil {
		return *k
	}
	return t.randomResetKey
}

// Close closes the Transport: listeners stop and every connection on it
// closes with ErrTransportClosed (without sending CONNECTION_CLOSE). It
// returns once the receive goroutine and the connections' goroutines
// ended. It may be called from a callback one of them makes (an
// AddressPolicy, ConnContext, NotifyReadable, ...): it then returns after
// 100 ms, without waiting for that goroutine, and the close completes
// behind it. A qlog recorder must not call it.
func (t *Transport) Close() error {
	t.close(true)
	return nil
}

func (t *Transport) close(waitConns bool) { t.closeWith(ErrTransportClosed, waitConns) }

// closedErr is the error the closed Transport's calls and connections
// report: ErrTransportClosed, carrying the socket error that closed it.
func (t *Transport) closedErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closeErr != nil {
		return t.closeErr
	}
	return ErrTransportClosed
}

func (t *Transport) closeWith(cause error, waitConns bool) {
	if err := t.init(); err != nil {
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closeErr = cause
	t.closed = true
	close(t.closedCh)
	srv := t.server
	t.server = nil
	live := make([]*Conn, 0, len(t.live))
	for c := range t.live {
		live = append(live, c)
	}
	t.mu.Unlock()
	for _, c := range live {
		c.wake() // a parked connection sees closedCh once started
	}
	if srv != nil {
		srv.closeLocked(cause)
		// Unlike Listener.Close, closing the Transport ends the queued
		// connections too: Accept has nothing more to hand out.
		for drained := false; !drained; {
			select {
			case <-srv.acceptCh:
			default:
				drained = true
			}
		}
	}
	if t.createdConn {
		_ = t.Conn.Close()
	} else {
		_ = t.Conn.SetReadDeadline(time.Now())
	}
	if t.inCallbacks.Load() == 0 {
		t.finishClose(waitConns)
		return
	}
	// Maybe called from a callback of the receive goroutine or of a
	// connection's: the waits would wait for the caller. Without a
	// goroutine's identity to tell, the close finishes on a goroutine of
	// its own, and the caller waits for it as long as the callbacks under
	// way may be someone else's: once none is under way, the caller is in
	// none, and waits to the end; while some stay under way for
	// selfCloseGrace, it may be one of them, and returns.
	done := make(chan struct{})
	go func() {
		t.finishClose(waitConns)
		close(done)
	}()
	tick := time.NewTicker(selfClosePoll)
	defer tick.Stop()
	for deadline := time.Now().Add(selfCloseGrace); ; {
		select {
		case <-done:
			return
		case now := <-tick.C:
			if t.inCallbacks.Load() == 0 {
				<-done
				return
			}
			if now.After(deadline) {
				return
			}
		}
	}
}

// selfClosePoll and selfCloseGrace: how often Close looks whether
// callbacks are under way when it began during one, and how long it waits
// at most when they stay under way (closeWith).
const (
	selfClosePoll  = 5 * time.Millisecond
	selfCloseGrace = 100 * time.Millisecond
)

// finishClose waits for the receive goroutine and, with waitConns, the
// connections' goroutines to end, then closes the tracer.
func (t *Transport) finishClose(waitConns bool) {
	<-t.readDone
	if !t.createdConn {
		_ = t.Conn.SetReadDeadline(time.Time{})
	}
	if waitConns {
		t.conns.Wait()
	}
	t.tracer.close()
}

func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// SetTokenSecret replaces the root secret of the listener's address
// validation (AddressValidationConfig.TokenSecret), for a secret file
// reloaded at run time; offload agents must switch to the same secret.
// Tokens minted under the old secret are rejected afterwards. It fails
// when the Transport has no listener with address validation, or for a
// secret that is not 32 bytes.
func (t *Transport) SetTokenSecret(secret []byte) error {
	t.mu.Lock()
	s := t.server
	t.mu.Unlock()
	if s == nil || s.tokens == nil {
		return errors.New("quic: SetTokenSecret: no listener with address validation")
	}
	return s.tokens.setSecret(secret)
}

// AddressValidationStats returns the address-validation counters of the
// Transport's listener (with the default validation when AddressValidation
// is nil); zero without a listener.
func (t *Transport) AddressValidationStats() AddressValidationStats {
	t.mu.Lock()
	m := t.avMetrics
	t.mu.Unlock()
	if m == nil {
		return AddressValidationStats{}
	}
	return m.snapshot()
}
