package announce

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Announcer defaults and limits.
const (
	// DefaultInterval is the full re-announce period when
	// AnnouncerConfig.Interval is zero.
	DefaultInterval = 5 * time.Second
	// FlushDelay is how long a queued connection ID waits for company
	// before its (partial) message is sent.
	FlushDelay = time.Millisecond
	// QueueCIDs bounds the connection IDs waiting to be sent. When the
	// queue is full, Add drops the new ID and counts it
	// (AnnouncerStats.Dropped); the ID is in Active, so the next
	// re-announce delivers it. Dropping the new one rather than the oldest
	// keeps Add a plain append.
	QueueCIDs = 4096
	// burstMessages is how many re-announce messages go out back to back
	// before a pause of burstPause, so that a re-announce of many IDs does
	// not overrun the agent's socket receive buffer.
	burstMessages = 64
	burstPause    = time.Millisecond
)

// AnnouncerConfig configures the host side of the channel.
type AnnouncerConfig struct {
	// Agent is the agent's control address.
	Agent netip.AddrPort
	// Key is the MAC key, Key(keyring); it must not be all zero.
	Key [32]byte
	// CIDLen is the server's connection ID length (1..20); Add and Active
	// IDs of any other length are ignored and counted.
	CIDLen int
	// Interval is the full re-announce period; 0 means DefaultInterval.
	Interval time.Duration
	// Active yields every connection ID routed now, for the re-announce;
	// it may be nil. It runs on the Announcer's goroutine, and yielded
	// slices are copied before yield returns.
	Active func(yield func(cid []byte) bool)
	// Skip, when set, reports the IDs that need no announcement: the
	// server's authenticated IDs (quiclb.Codec.Verify), which the agent's
	// fast path passes on their MAC. Add and the re-announce leave them
	// out and count them (AnnouncerStats.Skipped), so only what the MAC
	// cannot cover travels: a client's chosen DCID. It must be safe for
	// concurrent use.
	Skip func(cid []byte) bool
	// Logger receives send failures (a warning when sending starts to fail,
	// info when it works again). Nil discards.
	Logger *slog.Logger
}

// AnnouncerStats counts what an Announcer sent.
type AnnouncerStats struct {
	Messages    uint64 // messages sent
	CIDs        uint64 // connection IDs in those messages
	Dropped     uint64 // Add calls refused because the queue was full
	Invalid     uint64 // IDs of the wrong length from Add or Active
	SendErrors  uint64 // messages the socket refused
	Reannounces uint64 // completed full re-announces
	Skipped     uint64 // IDs from Add or Active that Skip left out
}

// Announcer sends the host's connection IDs to the agent: Add queues one
// for the next batch, and every Interval all of Active are sent again. It
// is safe for concurrent use.
type Announcer struct {
	conn     *net.UDPConn
	cidLen   int
	perMsg   int // connection IDs per message
	interval time.Duration
	active   func(yield func(cid []byte) bool)
	skip     func(cid []byte) bool
	log      *slog.Logger

	key atomic.Pointer[[32]byte]

	mu      sync.Mutex
	pending []byte // queued IDs, back to back; capacity QueueCIDs IDs
	closed  bool

	kick      chan struct{} // Add -> run: the queue became non-empty or holds a full message
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	// Owned by the run goroutine.
	sending []byte // the other half of the double buffer
	all     []byte // re-announce snapshot of Active
	msg     []byte
	mac     macState
	failing bool

	messages, cids, dropped, invalid, sendErrors, reannounces, skipped atomic.Uint64
}

// NewAnnouncer checks cfg, opens a UDP socket towards cfg.Agent and starts
// the goroutine that sends. Close stops it.
func NewAnnouncer(cfg AnnouncerConfig) (*Announcer, error) {
	switch {
	case !cfg.Agent.IsValid() || cfg.Agent.Port() == 0:
		return nil, fmt.Errorf("announce: invalid agent address %v", cfg.Agent)
	case cfg.CIDLen < 1 || cfg.CIDLen > MaxCIDLen:
		return nil, fmt.Errorf("announce: connection ID length %d is outside 1..%d", cfg.CIDLen, MaxCIDLen)
	case cfg.Interval < 0:
		return nil, fmt.Errorf("announce: negative re-announce interval %v", cfg.Interval)
	case cfg.Key == [32]byte{}:
		return nil, errors.New("announce: the key is all zero; derive it with announce.Key")
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(cfg.Agent))
	if err != nil {
		return nil, fmt.Errorf("announce: opening the control socket: %w", err)
	}
	a := &Announcer{
		conn:     conn,
		cidLen:   cfg.CIDLen,
		perMsg:   MaxCIDsPerMessage(cfg.CIDLen),
		interval: cfg.Interval,
		active:   cfg.Active,
		skip:     cfg.Skip,
		log:      cfg.Logger,
		pending:  make([]byte, 0, QueueCIDs*cfg.CIDLen),
		sending:  make([]byte, 0, QueueCIDs*cfg.CIDLen),
		msg:      make([]byte, 0, MaxMessageSize),
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	if a.interval == 0 {
		a.interval = DefaultInterval
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	k := cfg.Key
	a.key.Store(&k)
	a.wg.Add(1)
	go a.run()
	return a, nil
}

// Add queues cid (copied) for the agent; it is sent at once after a quiet
// spell of FlushDelay, otherwise within FlushDelay (batched), sooner when
// a message fills up. Add never blocks: when the
// queue is full the ID is dropped and counted. After Close it does nothing.
func (a *Announcer) Add(cid []byte) {
	if len(cid) != a.cidLen {
		a.invalid.Add(1)
		return
	}
	if a.skip != nil && a.skip(cid) {
		a.skipped.Add(1)
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	if len(a.pending) == cap(a.pending) {
		a.mu.Unlock()
		a.dropped.Add(1)
		return
	}
	first := len(a.pending) == 0
	a.pending = append(a.pending, cid...)
	full := len(a.pending) == a.perMsg*a.cidLen
	a.mu.Unlock()
	if first || full {
		select {
		case a.kick <- struct{}{}:
		default: // a kick is already pending; run reads the queue's state
		}
	}
}

// SetKey replaces the MAC key after a secret reload; the next message uses
// it.
func (a *Announcer) SetKey(k [32]byte) { a.key.Store(&k) }

// Stats returns the counters so far.
func (a *Announcer) Stats() AnnouncerStats {
	return AnnouncerStats{
		Messages:    a.messages.Load(),
		CIDs:        a.cids.Load(),
		Dropped:     a.dropped.Load(),
		Invalid:     a.invalid.Load(),
		SendErrors:  a.sendErrors.Load(),
		Reannounces: a.reannounces.Load(),
		Skipped:     a.skipped.Load(),
	}
}

// Close sends what is still queued (best effort), stops the goroutine and
// closes the socket. It is idempotent.
func (a *Announcer) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		a.mu.Unlock()
		close(a.done)
		a.wg.Wait()
		a.closeErr = a.conn.Close()
	})
	return a.closeErr
}

// run owns the socket's writes: batches of queued IDs and the periodic
// re-announce.
func (a *Announcer) run() {
	defer a.wg.Done()
	flushT := time.NewTimer(time.Hour)
	flushT.Stop()
	defer flushT.Stop()
	armed := false
	var lastFlush time.Time
	ticker := time.NewTicker(a.interval)
	defer ticker.Stop()
	for {
		select {
		case <-a.done:
			a.flush()
			return
		case <-a.kick:
			switch q := a.queued(); {
			case q >= a.perMsg:
				a.flush()
				lastFlush = time.Now()
				if armed {
					flushT.Stop()
					armed = false
				}
			case q > 0 && !armed:
				// Leading edge: an ID after a quiet spell (a new
				// connection's handshake SCID, which the client uses
				// within one round trip) goes at once; a burst behind it
				// is batched.
				if since := time.Since(lastFlush); since >= FlushDelay {
					a.flush()
					lastFlush = time.Now()
				} else {
					flushT.Reset(FlushDelay - since)
					armed = true
				}
			}
		case <-flushT.C:
			armed = false
			a.flush()
			lastFlush = time.Now()
		case <-ticker.C:
			a.reannounce()
		}
	}
}

func (a *Announcer) queued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) / a.cidLen
}

// flush sends everything queued, swapping buffers so that Add is not held
// up by the sends.
func (a *Announcer) flush() {
	a.mu.Lock()
	a.pending, a.sending = a.sending[:0], a.pending
	a.mu.Unlock()
	a.sendAll(a.sending, false)
	a.sending = a.sending[:0]
}

// reannounce sends every ID of Active. It copies them first so that Active
// (which may hold the QUIC stack's locks) returns before the paced sends.
func (a *Announcer) reannounce() {
	if a.active == nil {
		return
	}
	all := a.all[:0]
	a.active(func(cid []byte) bool {
		if len(cid) != a.cidLen {
			a.invalid.Add(1)
			return true
		}
		if a.skip != nil && a.skip(cid) {
			a.skipped.Add(1)
			return true
		}
		all = append(all, cid...)
		return true
	})
	a.all = all
	if a.sendAll(all, true) {
		a.reannounces.Add(1)
	}
}

// sendAll sends cids in as many messages as needed. When paced, it pauses
// after every burstMessages messages and gives up (returning false) if the
// Announcer is closed meanwhile.
func (a *Announcer) sendAll(cids []byte, paced bool) bool {
	per := a.perMsg * a.cidLen
	for sent := 0; len(cids) > 0; sent++ {
		if paced && sent > 0 && sent%burstMessages == 0 {
			select {
			case <-a.done:
				return false
			case <-time.After(burstPause):
			}
		}
		n := min(len(cids), per)
		a.send(cids[:n])
		cids = cids[n:]
	}
	return true
}

// send writes one message.
func (a *Announcer) send(cids []byte) {
	a.msg = appendMessage(a.msg[:0], &a.mac, a.key.Load(), a.cidLen, uint64(max(time.Now().UnixMilli(), 0)), cids)
	if _, err := a.conn.Write(a.msg); err != nil {
		a.sendErrors.Add(1)
		if !a.failing {
			a.failing = true
			a.log.Warn("announce: cannot send connection IDs to the agent", "agent", a.conn.RemoteAddr(), "err", err)
		}
		return
	}
	if a.failing {
		a.failing = false
		a.log.Info("announce: sending connection IDs to the agent again", "agent", a.conn.RemoteAddr())
	}
	a.messages.Add(1)
	a.cids.Add(uint64(len(cids) / a.cidLen))
}
