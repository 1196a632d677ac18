package quic

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/ackgen"
	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/flowcontrol"
	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/streambuf"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
)

// The packet number spaces as indexes of Conn.spaces.
const (
	spaceInitial   = int(protocol.SpaceInitial)
	spaceHandshake = int(protocol.SpaceHandshake)
	spaceApp       = int(protocol.SpaceAppData)
)

const (
	maxCryptoBuffer    = 64 << 10 // out-of-order CRYPTO data we hold per level
	maxUndecryptable   = 16       // packets kept until their keys arrive
	maxDatagramsPerRun = maxGSOSegments
)

// pnSpace is the state of one packet number space.
type pnSpace struct {
	sealer    *handshake.Sealer // Initial and Handshake only; 1-RTT uses Conn.app
	opener    *handshake.Opener
	tracker   ackgen.Tracker
	nextPN    uint64
	crypto    streambuf.SendBuffer
	cryptoIn  *streambuf.RecvBuffer // created by the first CRYPTO frame
	discarded bool
	probes    int // ack-eliciting packets the PTO asked for
	ranges    []wire.AckRange

	// skip leaves a 1-RTT packet number unused now and then, to catch a
	// peer that acknowledges packets it never received (RFC 9000
	// section 21.4); it never skips in the Initial and Handshake spaces.
	skip recovery.PacketNumberSkipper
}

// receivedPacket is one datagram handed from the Transport's read loop.
type receivedPacket struct {
	buf  *[]byte
	data []byte
	// remote is the sender; with batched reads only addrPort is set until
	// the address is needed (a new connection, a stateless reset).
	remote   net.Addr
	addrPort netip.AddrPort
	rcvTime  time.Time
	ecn      protocol.ECN // the IP header's ECN codepoint
	// checksum (Config.Tracer) is that of the datagram a packet kept for
	// later keys came in, which its packet events report.
	checksum qlog.DatagramPayloadChecksum
	// local is the address it was sent to, when the socket reports it
	// (a server answers from that address, local_address.go).
	local netip.Addr
	// via is the Transport it came in on (a client's paths, path.go).
	via *Transport
}

// Locking. A Conn is driven by one goroutine, run (the event loop), and
// called from any number of application goroutines (Conn and stream
// methods). While idle it has no goroutine (parked, conn_park.go); wake
// starts a new one, and one runs the loop at a time, so "run's alone"
// below holds across them. Its fields follow one rule, by group:
//
//   - Set once: the fields above mu in Conn (the Transport, config, role,
//     context, and the channels wakeCh, closedCh, closeWritten, runDone and
//     handshakeDoneCh) are written in newConn, or before the goroutine
//     starts, and never reassigned. Anyone reads them without a lock; the
//     channels are closed exactly once (closedCh and handshakeDoneCh under
//     mu, closeWritten and runDone by run).
//   - recvMu guards the receive queue (recvQueue, recvSpare) only: the
//     Transport's read loop hands datagrams over without touching mu.
//   - mu guards everything else: every field below mu in Conn, each of the
//     sub-structs (close, early, streams, hs, path, send, ...; each type's
//     comment says so), and the streams' state (stream). Broadcast channels
//     in them (streamSet.sig, datagramQueues.sendSig, ...) are created
//     and closed under mu; waiters take them under mu and wait without it.
//   - Three exceptions, all run's alone: sendState.spare, Conn.outSpare,
//     and reading pathState.remote and connExtensions.local without mu
//     in writeDatagrams, which is safe because only run writes them (with
//     mu held).
//   - delivering is an atomic: whoever delivers the outbox sets it.
//
// Counters shared with the Transport or the listener are theirs:
// serverLoad under baseServer.mu, the Transport's budgets atomics.
//
// No application callback runs under mu (nor under any other lock of
// ours): what state changes under mu ask of one is queued (callbackOutbox,
// tokenState.toStore, connFlow's growth request) and run makes the calls
// after it released mu; the application's ConnectionIDGenerator fills a
// stock of IDs (cidState.spare) without mu, and WriteWithLimit's limiter is
// asked by the writer (limitedWrite.offer). The exception, listed in
// docs/api.md "Callbacks", is crypto/tls's callbacks during the handshake.

// Conn is a QUIC connection. All its state is guarded by mu and driven by
// one goroutine (run) that processes received packets and timers and sends;
// API calls change state under mu and wake that goroutine (see Locking
// above for the exceptions).
type Conn struct {
	// Set once, read without a lock.
	t            *Transport
	isClient     bool
	config       *Config
	tlsConf      *tls.Config // a server's is dropped once crypto/tls has it (startTLS)
	server       *baseServer // server side: where to queue the conn once ready
	baseDatagram int         // Config.InitialPacketSize: the size to start at and fall back to
	ctx          context.Context
	cancelCtx    context.CancelCauseFunc
	wakeCh       chan struct{} // capacity 1: run has work (wake)
	closedCh     chan struct{} // closed when the connection is closed for the user
	closeWritten chan struct{} // closed once our CONNECTION_CLOSE was written
	runDone      chan struct{} // closed when run returns
	// delivering is set while a goroutine makes the outbox's calls into
	// the application's callbacks (callbackOutbox.deliver); an atomic,
	// read by CloseWithError without a lock.
	delivering atomic.Bool
	// handshakeDoneCh is closed when the TLS handshake completed.
	handshakeDoneCh chan struct{}

	// inbox is the datagrams the Transport handed over and the goroutine
	// has not taken yet, under a lock of its own (conn_inbox.go).
	inbox inbox
	// parking says whether the goroutine exited while idle, with atomics
	// of its own (conn_park.go).
	parking parkState

	// mu guards all that follows. It is the outermost lock: the order
	// of the package's locks is in doc.go ("# Locking").
	mu sync.Mutex

	version wire.Version                // changes with Version Negotiation
	spaces  [protocol.NumSpaces]pnSpace // Initial, Handshake and application data
	frame   *wire.Frame                 // scratch: the frame being parsed (nil while parked)

	hs        handshakeState // conn_tls.go
	early     earlyData      // conn_early.go
	keys      keyState       // key_update.go
	cids      cidState       // conn_ids.go
	tokens    tokenState     // conn_ids.go
	admit     admission      // server_limits.go
	path      pathState      // conn_path.go
	mtu       mtuDiscovery   // mtu.go
	ecn       ecnTracker     // conn_ecn.go
	loss      lossState      // conn_loss.go
	idle      idleState      // conn_idle.go
	streams   streamSet      // conn_streams.go
	flow      connFlow       // conn_streams.go
	budget    memoryBudget   // send_budget.go
	recvMem   recvMemory     // recv_memory.go
	datagrams datagramQueues // conn_datagram.go
	send      sendState      // send_batch.go
	close     closeState     // conn_close.go
	// x holds the state of version negotiation, preferred_address and
	// requested key updates (conn_extensions.go).
	x connExtensions

	// Observability.
	stats connStats
	trace *connTracer // nil unless Config.Tracer or Config.Qlog gave a trace
	// qlogTrace is the connection's trace (QlogTrace), kept after the
	// connection's own recorder closed.
	qlogTrace qlogwriter.Trace
	// out holds the calls into the Tracer callbacks and others made under
	// mu, for run to make without it (callbacks.go); outSpare, run's
	// alone, is the events slice it delivered last.
	out      callbackOutbox
	outSpare []qlogwriter.Event
	// traceEnded is closed once the recorder was closed, nil without a
	// recorder (callbackOutbox.recorderClosed).
	traceEnded chan struct{}
}

func newConn(ctx context.Context, t *Transport, isClient bool, conf *Config, tlsConf *tls.Config, v wire.Version, remote net.Addr) *Conn {
	c := &Conn{
		t:               t,
		isClient:        isClient,
		config:          conf,
		tlsConf:         tlsConf,
		version:         v,
		wakeCh:          make(chan struct{}, 1),
		closedCh:        make(chan struct{}),
		closeWritten:    make(chan struct{}),
		runDone:         make(chan struct{}),
		handshakeDoneCh: make(chan struct{}),
	}
	c.streams.all = make(map[uint64]*stream)
	c.keys.first1RTTPN = -1
	c.hs.peerAckDelayExp = wire.DefaultAckDelayExponent
	c.path.remote = remote
	c.idle.lastActivity = time.Now()
	c.idle.lastSendOrRecv = c.idle.lastActivity
	c.stats.started = c.idle.lastActivity
	c.path.remoteAP, _ = addrPort(remote)
	c.path.sendT = t
	c.baseDatagram = int(conf.InitialPacketSize)
	c.send.maxDatagram = c.baseDatagram
	c.ctx, c.cancelCtx = context.WithCancelCause(ctx)
	c.loss.rec = recovery.New(conf.recoveryConfig(!isClient))
	c.loss.pacer = congestion.NewPacer(congestion.DefaultMaxDatagramSize)
	if c.baseDatagram != maxPacketSize {
		c.send.setMaxDatagram(c.baseDatagram, &c.loss)
	}
	c.spaces[spaceInitial].tracker.Init(protocol.SpaceInitial, ackgen.Config{})
	c.spaces[spaceHandshake].tracker.Init(protocol.SpaceHandshake, ackgen.Config{})
	c.spaces[spaceApp].tracker.Init(protocol.SpaceAppData, ackgen.Config{})
	c.spaces[spaceApp].skip.Start(nil)
	c.flow.recv = flowcontrol.NewConnReceiver(flowcontrol.WindowConfig{
		Initial: conf.InitialConnectionReceiveWindow,
		Max:     conf.MaxConnectionReceiveWindow,
	})
	if conf.AllowConnectionWindowIncrease != nil {
		// Asked by askGrowth, without mu (flowcontrol's requests).
		c.flow.recv.AskBeforeGrowth()
	}
	persp := PerspectiveServer
	if isClient {
		persp = PerspectiveClient
	}
	c.streams.persp = persp
	c.streams.counts.Init(persp, uint64(conf.MaxIncomingStreams), uint64(conf.MaxIncomingUniStreams))
	return c
}

// deliver queues a datagram from the Transport; it never blocks.
func (c *Conn) deliver(p receivedPacket) {
	queued, first := c.inbox.push(p)
	if !queued {
		putBuffer(p.buf)
		c.t.countDropped(DropRecvQueueFull, len(p.data))
		return
	}
	if first {
		c.wake()
	}
}

// run is the connection's event loop.
//
// The goroutine exits while the connection is idle (park) and wake starts
// it again; it closes runDone only when the connection ends.
func (c *Conn) run() {
	c.parking.unpark()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	received := false // a datagram arrived since the timer last fired
	// handleInbox handles a batch of datagrams taken from the inbox (a
	// closure: quic.Conn keeps its method budget, internal/archtest).
	handleInbox := func(q []receivedPacket) {
		c.mu.Lock()
		c.guard(func() {
			for _, p := range q {
				c.handleDatagram(p)
			}
			for c.keys.retryLater {
				c.keys.retryLater = false
				c.retryUndecryptable()
			}
		})
		c.syncBudgets()
		c.admit.updateCost(c.server, &c.spaces, len(c.keys.undecryptable))
		tokens := c.tokens.takeToStore()
		c.unlockAndDeliver()
		c.inbox.done(q)
		if len(tokens) > 0 {
			app := appCalls{&c.delivering, c.t}
			app.enter()
			for _, tok := range tokens {
				c.config.TokenStore.Put(c.tokens.storeKey, tok)
			}
			app.exit()
		}
	}
	for {
		// Datagrams already queued count before the timers: one that
		// arrived before the idle deadline keeps the connection open
		// even when this goroutine (restarted from parking, or late
		// under load) runs after it.
		if q := c.inbox.take(); len(q) > 0 {
			received = true
			handleInbox(q)
		}
		c.mu.Lock()
		now := time.Now()
		c.guard(func() { c.onTimers(now) })
		if c.recvMem.shed.Load() {
			// The Transport picked this connection to free memory
			// (Transport.MaxReceiveMemory); it closes on its own goroutine.
			c.shedLocked()
		}
		if c.close.finished {
			c.teardownLocked()
			c.unlockAndDeliver()
			c.parking.unpark()
			close(c.runDone)
			c.t.connDone(c)
			c.t.connEnded(c)
			return
		}
		var more bool
		c.guard(func() { more = c.sendLocked(now) })
		writes := c.send.pending
		c.send.pending, c.send.spare = c.send.spare, nil
		drained := c.send.takeDrained()
		sendT := c.path.sendT
		deadline := c.nextDeadlineLocked(now)
		notifyClose := c.close.closing && !c.close.notified
		c.close.notified = c.close.notified || notifyClose
		closing, closeAt := c.close.closing || c.close.draining, c.close.deadline
		growth, askGrowth := c.flow.takeGrowthRequest(c.close.err != nil)
		spareShort := c.cids.spareShort(c.close.err != nil)
		// Before the datagrams: a recorder closed with our
		// CONNECTION_CLOSE is closed when CloseWithError returns.
		c.unlockAndDeliver()
		if spareShort > 0 {
			// The application's ConnectionIDGenerator runs without mu.
			ids, failed := newSpareIDs(c.t.cidGen, spareShort)
			c.mu.Lock()
			issue := c.cids.addSpare(ids, failed, c.close.err != nil)
			c.mu.Unlock()
			if issue {
				c.wake() // their NEW_CONNECTION_ID frames go out next turn
			}
		}
		if askGrowth {
			go c.askGrowth(growth)
		}
		// The writers read their next data while the datagrams go out.
		c.send.wakeWriters(drained)
		if err := c.writeDatagrams(writes, sendT); err != nil {
			c.mu.Lock()
			c.destroyLocked(&sendError{err})
			c.unlockAndDeliver()
		}
		if cap(writes) <= maxDatagramsPerRun {
			clear(writes)
			c.send.spare = writes[:0] // the next run's, so sending allocates nothing
		}
		if notifyClose {
			close(c.closeWritten)
		}
		if closing && !time.Now().Before(closeAt) {
			// No closing period (or it is over): end now rather than on
			// a timer, so that closing needs no clock to move (a
			// synctest bubble's stops when its test returns).
			continue
		}
		if more {
			c.wake()
		}
		var wait time.Duration
		if !deadline.IsZero() {
			wait = max(time.Until(deadline), 0)
		} else {
			wait = time.Hour
		}
		// Past parkAfter with nothing to do, the goroutine parks.
		timer.Reset(min(wait, parkAfter))
		select {
		case <-timer.C:
			if wait > parkAfter && (deadline.IsZero() || time.Until(deadline) > parkAfter) && c.park(deadline) {
				return
			}
			if !received {
				c.inbox.shrink()
			}
			received = false
		case <-c.wakeCh:
			// The loop's top takes what the inbox holds.
		case <-c.t.closedCh:
			err := c.t.closedErr()
			c.mu.Lock()
			c.destroyLocked(err)
			c.unlockAndDeliver()
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// askGrowth asks Config.AllowConnectionWindowIncrease whether the
// connection window may grow by delta and applies the answer. It runs on a
// goroutine of its own, without mu, so the callback may call any method of
// the connection, even those that wait for run (CloseWithError).
func (c *Conn) askGrowth(delta uint64) {
	allowed := c.config.AllowConnectionWindowIncrease(c, delta)
	c.mu.Lock()
	allowed = allowed && c.close.err == nil
	c.flow.growthAnswered(delta, allowed)
	c.mu.Unlock()
	if allowed {
		c.wake() // the grown window goes out in a MAX_DATA frame
	}
}

// endUnstarted ends a connection whose goroutine never ran, as run would
// end it on a closed Transport.
func (c *Conn) endUnstarted(err error) {
	defer close(c.runDone)
	c.mu.Lock()
	c.destroyLocked(err)
	c.teardownLocked()
	c.unlockAndDeliver()
	c.t.connDone(c)
}

// guard runs f (with mu held) and turns a panic, which would be a bug in
// this package, into closing this connection with INTERNAL_ERROR, so that
// neither the application nor the other connections go down with it.
func (c *Conn) guard(f func()) {
	defer func() {
		if r := recover(); r != nil {
			c.t.recoveredPanic("connection", r)
			c.send.pending = nil
			if c.close.err == nil {
				c.signalClosedLocked(&TransportError{ErrorCode: InternalError, ErrorMessage: fmt.Sprint("quic: internal error: ", r)})
			}
			c.close.finished = true
		}
	}()
	f()
}

// onTimers fires the timers that expired by now.
func (c *Conn) onTimers(now time.Time) {
	if c.close.finished {
		return
	}
	if c.close.closing || c.close.draining {
		// Not before our CONNECTION_CLOSE went out, even with no closing
		// period (closeState.period).
		if !now.Before(c.close.deadline) && (c.close.draining || c.close.notified) {
			c.close.finished = true
		}
		return
	}
	if failed, fellBack := c.path.timers(now, &c.x.local); failed {
		if m := c.server.avMetrics(); m != nil {
			m.pathValidationFailures.Inc()
		}
		if fellBack {
			c.loss.onPathChanged(now)
			c.mtu.restart(now, c.baseDatagram, &c.send, &c.loss, c.hs.confirmed, c.hs.peerParams, mtuEnabled(c.config, c.t))
		}
	}
	// As in quic-go: silence for the idle timeout (the handshake idle
	// timeout before completion) is an IdleTimeoutError; a handshake that
	// takes twice the handshake idle timeout in all, a HandshakeTimeoutError.
	if dl := c.idle.deadline(c.config, &c.hs, &c.loss); !now.Before(dl) {
		c.destroyLocked(&IdleTimeoutError{})
		return
	}
	if dl := c.idle.handshakeDeadline(c.config, &c.hs, c.stats.started); !dl.IsZero() && !now.Before(dl) {
		c.destroyLocked(&HandshakeTimeoutError{})
		return
	}
	if ka := c.idle.keepAliveAt(c.config, &c.hs, c.send.pingPending, &c.loss); !ka.IsZero() && !now.Before(ka) {
		c.send.pingPending = true
	}
	if lt := c.loss.rec.LossDetectionTimeout(); !lt.IsZero() && !now.Before(lt) {
		c.loss.events.Reset()
		act := c.loss.rec.OnLossDetectionTimeout(now, &c.loss.events)
		if c.trace != nil {
			c.trace.lost(&c.loss)
		}
		for _, p := range c.loss.events.Lost {
			c.onPacketLost(p.Handle, now)
		}
		c.loss.countLost(now, &c.stats, &c.mtu, c.baseDatagram, &c.send)
		if c.trace != nil {
			c.traceMetrics()
		}
		if act.Kind == recovery.TimeoutProbe {
			c.stats.ptos++
			sp := &c.spaces[act.Space]
			sp.probes = act.Probes
			if act.Space != protocol.SpaceAppData {
				// Resend the whole unacknowledged flight in the probe, of
				// both handshake spaces: the peer needs all of it (a
				// server's ServerHello in Initial and the rest in
				// Handshake), and one probe carrying both gets further
				// under loss than two timers that each must get lucky
				// (RFC 9002 6.2.4: coalesce packets of the other spaces
				// with data in flight).
				c.requeueHandshakeCrypto()
				// A client whose handshake completed but is not confirmed
				// has 1-RTT packets in flight that no PTO of their own
				// covers (RFC 9002 6.2.1), and the server, which got our
				// Finished, may have dropped its Handshake keys: then only
				// a 1-RTT packet draws an answer, whose acknowledgment
				// confirms the handshake. The probe carries one too
				// (RFC 9002 6.2.4: the other spaces with data in flight).
				if c.hs.complete && !c.hs.confirmed && c.canSealIn(spaceApp) && c.loss.appInFlight() {
					c.spaces[spaceApp].probes = act.Probes
					for _, p := range c.loss.takeOldestData(act.Probes) {
						if p != nil {
							c.requeueFrames(p, time.Time{})
						}
					}
				}
			} else {
				for _, p := range c.loss.takeOldestData(act.Probes) {
					if p != nil {
						c.requeueFrames(p, time.Time{})
					}
				}
			}
		}
	}
	if !c.keys.dropPrevAt.IsZero() && !now.Before(c.keys.dropPrevAt) {
		c.keys.dropPrevAt = time.Time{}
		c.keys.app.DropPreviousKeys()
	}
	if c.keys.app != nil && c.keys.app.CanSend() {
		// Update keys well before the confidentiality limit; close if the
		// peer kept us from updating until the limit (RFC 9001 6.6).
		if c.keys.app.SealedPackets() >= c.keys.updateAfter() {
			_ = c.keys.initiateUpdate(c.hs.confirmed, c.trace)
		}
		c.keys.requestedUpdate(c.hs.confirmed, c.trace)
		c.x.pa.takeSwitchedAddress(&c.path)
		c.startPreferredAddressMigration()
		if c.keys.app.ConfidentialityLimitReached() {
			c.closeWithError(qerr.NewTransportError(qerr.AEADLimitReached, 0, "confidentiality limit reached"))
			return
		}
	}
	if !c.send.pacingDeadline.IsZero() && !now.Before(c.send.pacingDeadline) {
		c.send.pacingDeadline = time.Time{}
	}
}

func (c *Conn) nextDeadlineLocked(now time.Time) time.Time {
	var d time.Time
	add := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if c.close.finished {
		return time.Now()
	}
	if c.close.closing || c.close.draining {
		return c.close.deadline
	}
	add(c.idle.deadline(c.config, &c.hs, &c.loss))
	add(c.idle.handshakeDeadline(c.config, &c.hs, c.stats.started))
	add(c.idle.keepAliveAt(c.config, &c.hs, c.send.pingPending, &c.loss))
	add(c.loss.rec.LossDetectionTimeout())
	add(c.send.pacingDeadline)
	add(c.keys.dropPrevAt)
	add(c.path.migration.nextTimer())
	add(c.mtu.deadline(now))
	for i := range c.spaces {
		sp := &c.spaces[i]
		if !sp.discarded && !sp.tracker.AckNow() {
			add(sp.tracker.AlarmTime())
		}
	}
	return d
}

// signalClosedLocked makes the close visible to API callers.
func (c *Conn) signalClosedLocked(err error) {
	c.close.err = err
	c.hs.abandon()
	if c.trace != nil {
		c.trace.closed(err)
	}
	close(c.closedCh)
	c.cancelCtx(err)
	for _, s := range c.streams.all {
		s.onConnClosed()
	}
}

// destroyLocked closes the connection without sending anything.
func (c *Conn) destroyLocked(err error) {
	if c.close.finished {
		return
	}
	if c.close.err == nil {
		c.signalClosedLocked(err)
	}
	c.close.finished = true
	c.trace.end(c.close.err)
	c.trace = nil
}

// teardownLocked releases everything once the connection is finished.
func (c *Conn) teardownLocked() {
	if c.hs.tls != nil {
		c.hs.tls.Close()
	}
	for _, p := range c.keys.undecryptable {
		putBuffer(p.buf)
	}
	c.keys.undecryptable = nil
	c.t.removeHandlers(c)
	for _, p := range c.path.extra {
		p.t.removeHandlers(c)
		p.closeLocked()
	}
	c.inbox.drop()
	c.admit.release(c.server, c)
	c.budget.release(c.streams.all, &c.recvMem, c.t)
	c.trace.end(c.close.err)
	c.trace = nil
}

// Context returns a context that is canceled when the connection closes,
// with the close error as its cause.
func (c *Conn) Context() context.Context { return c.ctx }

// HandshakeComplete returns a channel closed when the TLS handshake completed.
func (c *Conn) HandshakeComplete() <-chan struct{} { return c.handshakeDoneCh }

// LocalAddr returns the local address: that of the path in use.
func (c *Conn) LocalAddr() net.Addr {
	c.mu.Lock()
	t := c.path.sendT
	c.mu.Unlock()
	return t.Conn.LocalAddr() // the application's PacketConn: without mu
}

// RemoteAddr returns the peer's address; it changes when a client migrates
// (a server follows it, RFC 9000 section 9).
func (c *Conn) RemoteAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.path.remote
}

// ConnectionState returns the TLS and QUIC state of the connection.
func (c *Conn) ConnectionState() ConnectionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s ConnectionState
	s.TLS = c.hs.tlsConnectionState()
	s.Version = c.version
	s.SupportsDatagrams.Local = c.config.EnableDatagrams
	// As quic-go: what the peer advertised, even with ours off.
	s.SupportsDatagrams.Remote = c.datagrams.peerSupports
	s.SupportsStreamResetPartialDelivery.Local = c.config.EnableStreamResetPartialDelivery
	s.SupportsStreamResetPartialDelivery.Remote = c.hs.peerAcceptsResetStreamAt()
	s.GSO = c.t.gso
	s.Used0RTT = c.early.used
	s.RequireStreamCreditRelease = c.config.RequireStreamCreditRelease
	s.ValidatedBy = c.admit.validatedBy
	return s
}

// CloseWithError closes the connection with an application error code and
// message, which the peer sees as an ApplicationError. It returns once the
// CONNECTION_CLOSE was written, and with it the qlog trace ended; the
// connection's goroutine stays for the closing period (three PTOs) to
// answer late packets, except for a connection of Dial or DialAddr, whose
// Transport closes with it at once. On a connection closed already (by
// the peer, a timeout) it returns once the qlog trace ended. From a
// callback the connection's goroutine makes (NotifyReadable, ...) it
// returns at once.
func (c *Conn) CloseWithError(code ApplicationErrorCode, msg string) error {
	c.mu.Lock()
	initiated := c.close.err == nil && !c.close.finished
	c.closeLocal(&ApplicationError{ErrorCode: code, ErrorMessage: msg})
	traceEnded := c.traceEnded
	c.mu.Unlock()
	c.wake()
	// Like quic-go, return once CONNECTION_CLOSE went to the socket, so
	// closing the Transport right after cannot swallow it; but not from
	// a callback run makes (NotifyReadable, NotifyAcceptable, a final
	// size, ConnectionIDAdded, TokenStore.Put): run is the caller there, and would wait
	// for itself. Another goroutine calling in those microseconds returns
	// at once as well; run writes the close once the callbacks returned.
	// On a connection closed already (the peer's close, a timeout), it
	// returns once the qlog recorder was closed, so the trace is whole
	// for a program that exits then.
	switch {
	case c.delivering.Load():
	case initiated:
		select {
		case <-c.closeWritten:
		case <-c.runDone:
		}
	case traceEnded != nil:
		select {
		case <-traceEnded:
		case <-c.runDone:
		}
	}
	return nil
}

// connStats counts what ConnectionStats reports.
type connStats struct {
	packetsSent, packetsLost, ptos uint64
	bytesSent, bytesLost           uint64
	packetsRecv, bytesRecv         uint64
	blockedRecv                    uint64 // DATA_BLOCKED, STREAMS_BLOCKED and STREAM_DATA_BLOCKED frames
	handshakeTiming                       // conn_handshake_timing.go
}

// ConnectionStats holds statistics of a connection, as in quic-go.
type ConnectionStats struct {
	MinRTT           time.Duration
	LatestRTT        time.Duration
	SmoothedRTT      time.Duration
	MeanDeviation    time.Duration
	CongestionWindow uint64
	BytesSent        uint64
	PacketsSent      uint64
	BytesReceived    uint64
	PacketsReceived  uint64
	BytesLost        uint64
	PacketsLost      uint64
	// PacketsSpuriouslyLost counts 1-RTT packets declared lost that the
	// peer acknowledged later: reordered, not dropped. They are included
	// in PacketsLost.
	PacketsSpuriouslyLost uint64
	// HandshakeDuration is how long the handshake took, from the
	// connection's start (a client's dial, a server's first Initial) to
	// its completion; zero until then.
	HandshakeDuration time.Duration
}

// ConnectionStats returns the connection's RTT estimates, congestion window
// and packet counters. Bytes count whole UDP payloads (coalesced packets
// once per datagram when received).
func (c *Conn) ConnectionStats() ConnectionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	rtt := c.loss.rec.RTT()
	return ConnectionStats{
		MinRTT:           rtt.MinRTT(),
		LatestRTT:        rtt.LatestRTT(),
		SmoothedRTT:      rtt.SmoothedRTT(),
		MeanDeviation:    rtt.RTTVar(),
		CongestionWindow: uint64(c.loss.rec.Controller().CongestionWindow()),
		BytesSent:        c.stats.bytesSent,
		PacketsSent:      c.stats.packetsSent,
		BytesReceived:    c.stats.bytesRecv,
		PacketsReceived:  c.stats.packetsRecv,
		BytesLost:        c.stats.bytesLost,
		PacketsLost:      c.stats.packetsLost,

		PacketsSpuriouslyLost: c.loss.rec.Reordering().SpuriousLosses,

		HandshakeDuration: c.stats.handshakeDuration,
	}
}

// waitLocked releases the connection lock until sig (or budget, when not
// nil) fires, the deadline (when not zero) passes, the connection closes
// or ctx ends, then takes it again. It returns ctx's error when ctx ended.
func (c *Conn) waitLocked(ctx context.Context, sig, budget <-chan struct{}, deadline time.Time) error {
	c.mu.Unlock()
	defer c.mu.Lock()
	var tc <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-sig:
	case <-budget:
	case <-tc:
	case <-c.closedCh:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
