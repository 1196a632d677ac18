package announce

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// DefaultMaxAge is the Listener's freshness window when ListenerConfig
// leaves MaxAge zero.
const DefaultMaxAge = 30 * time.Second

// warnEvery bounds how often the Listener logs rejections at warning level
// (key or length mismatches an operator must fix); the rest go to debug.
const warnEvery = 10 * time.Second

// readBufSize is larger than any valid message so that an oversized
// datagram is read whole and rejected, not truncated into something else.
const readBufSize = 64 << 10

// ListenerConfig configures the agent side of the channel.
type ListenerConfig struct {
	// Conn is the control socket, bound to the address the host announces
	// to. The Listener reads from it and sets its read deadline; the caller
	// closes it.
	Conn net.PacketConn
	// Key is the MAC key, Key(keyring); it must not be all zero.
	Key [32]byte
	// CIDLen is the length of the server's connection IDs (1..20); messages
	// for another length are rejected.
	CIDLen int
	// MaxAge is the freshness window: messages whose timestamp is further
	// than MaxAge from the local clock, in either direction, are rejected.
	// Zero means DefaultMaxAge.
	MaxAge time.Duration
	// Insert is called, on the Serve goroutine, for each connection ID of an
	// authentic message. cid is only valid during the call.
	Insert func(cid []byte)
	// Logger receives rejections (debug; at most one warning per 10 s).
	// Nil discards.
	Logger *slog.Logger
}

// ListenerStats counts what a Listener received.
type ListenerStats struct {
	Messages uint64 // authentic messages accepted
	CIDs     uint64 // connection IDs passed to Insert
	// Rejected counts rejected datagrams by reason; index ReasonNone stays 0.
	Rejected [NumReasons]uint64
}

// keySet is the Listener's current key and the one it replaced, accepted
// until prevUntilMs so the two sides need not reload at the same instant.
type keySet struct {
	cur         [32]byte
	prev        [32]byte
	hasPrev     bool
	prevUntilMs int64
}

// Listener receives announcements on the agent and inserts the connection
// IDs of authentic, fresh messages. Serve runs it; Stats and SetKey may be
// called concurrently with Serve.
type Listener struct {
	conn     net.PacketConn
	udp      *net.UDPConn // conn, when it is one: reads without allocating
	cidLen   int
	maxAgeMs int64
	insert   func([]byte)
	log      *slog.Logger

	keys    atomic.Pointer[keySet]
	serving atomic.Bool

	// Owned by the Serve goroutine.
	buf        []byte
	curMAC     macState
	prevMAC    macState
	lastWarnMs int64

	messages atomic.Uint64
	cids     atomic.Uint64
	rejected [NumReasons]atomic.Uint64
}

// NewListener checks cfg and returns a Listener; call Serve to run it.
func NewListener(cfg ListenerConfig) (*Listener, error) {
	switch {
	case cfg.Conn == nil:
		return nil, errors.New("announce: listener needs a Conn")
	case cfg.Insert == nil:
		return nil, errors.New("announce: listener needs an Insert function")
	case cfg.CIDLen < 1 || cfg.CIDLen > MaxCIDLen:
		return nil, fmt.Errorf("announce: connection ID length %d is outside 1..%d", cfg.CIDLen, MaxCIDLen)
	case cfg.MaxAge < 0:
		return nil, fmt.Errorf("announce: negative MaxAge %v", cfg.MaxAge)
	case cfg.Key == [32]byte{}:
		return nil, errors.New("announce: the key is all zero; derive it with announce.Key")
	}
	maxAge := cfg.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	l := &Listener{
		conn:     cfg.Conn,
		cidLen:   cfg.CIDLen,
		maxAgeMs: max(maxAge.Milliseconds(), 1),
		insert:   cfg.Insert,
		log:      cfg.Logger,
		buf:      make([]byte, readBufSize),
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.udp, _ = cfg.Conn.(*net.UDPConn)
	l.keys.Store(&keySet{cur: cfg.Key})
	return l, nil
}

// SetKey replaces the MAC key after a secret reload. The previous key stays
// accepted for MaxAge.
func (l *Listener) SetKey(k [32]byte) {
	old := l.keys.Load()
	if old.cur == k {
		return
	}
	l.keys.Store(&keySet{
		cur:         k,
		prev:        old.cur,
		hasPrev:     true,
		prevUntilMs: time.Now().UnixMilli() + l.maxAgeMs,
	})
}

// Stats returns the counters so far.
func (l *Listener) Stats() ListenerStats {
	s := ListenerStats{Messages: l.messages.Load(), CIDs: l.cids.Load()}
	for i := range s.Rejected {
		s.Rejected[i] = l.rejected[i].Load()
	}
	return s
}

// Serve reads and handles announcements until ctx ends (it returns
// ctx.Err()) or the Conn is closed (it returns nil). Any other read error
// is returned. Only one Serve may run at a time.
func (l *Listener) Serve(ctx context.Context) error {
	if !l.serving.CompareAndSwap(false, true) {
		return errors.New("announce: Serve is already running")
	}
	defer l.serving.Store(false)
	// A previous Serve may have left the deadline in the past.
	if err := l.conn.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("announce: control socket: %w", err)
	}
	// Unblock the read when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = l.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		n, from, err := l.read()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("announce: reading the control socket: %w", err)
		}
		if r := l.handle(l.buf[:n]); r != ReasonNone {
			l.logReject(r, from, n)
		}
	}
}

func (l *Listener) read() (int, netip.AddrPort, error) {
	if l.udp != nil {
		return l.udp.ReadFromUDPAddrPort(l.buf)
	}
	n, addr, err := l.conn.ReadFrom(l.buf)
	var from netip.AddrPort
	if ua, ok := addr.(*net.UDPAddr); ok {
		from = ua.AddrPort()
	}
	return n, from, err
}

// handle checks one datagram and, if it is an authentic and fresh
// announcement, inserts its connection IDs. It counts the outcome. It runs
// on the Serve goroutine (or a test's, never both).
func (l *Listener) handle(b []byte) Reason {
	m, r := l.check(b)
	if r != ReasonNone {
		l.rejected[r].Add(1)
		return r
	}
	for i := 0; i < len(m.cids); i += l.cidLen {
		l.insert(m.cids[i : i+l.cidLen : i+l.cidLen])
	}
	l.messages.Add(1)
	l.cids.Add(uint64(m.count))
	return ReasonNone
}

// check runs every check on b and returns the parsed message if all pass.
func (l *Listener) check(b []byte) (message, Reason) {
	m, r := parseMessage(b)
	if r != ReasonNone {
		return m, r
	}
	if m.cidLen != l.cidLen {
		return m, ReasonCIDLen
	}
	nowMs := time.Now().UnixMilli()
	ks := l.keys.Load()
	if !hmac.Equal(l.curMAC.sum(&ks.cur, m.body), m.mac) &&
		(!ks.hasPrev || nowMs >= ks.prevUntilMs || !hmac.Equal(l.prevMAC.sum(&ks.prev, m.body), m.mac)) {
		return m, ReasonMAC
	}
	if m.timestamp > math.MaxInt64 {
		return m, ReasonFuture
	}
	// Both are non-negative int64 values (now is after 1970), so the
	// difference cannot overflow.
	age := nowMs - int64(m.timestamp)
	switch {
	case age > l.maxAgeMs:
		return m, ReasonTooOld
	case -age > l.maxAgeMs:
		return m, ReasonFuture
	}
	return m, ReasonNone
}

// logReject logs at debug level, and at warning level at most once per
// warnEvery for the reasons that point at a misconfiguration (or a replay)
// rather than at stray garbage.
func (l *Listener) logReject(r Reason, from netip.AddrPort, n int) {
	switch r {
	case ReasonVersion, ReasonCIDLen, ReasonMAC, ReasonTooOld, ReasonFuture:
		if nowMs := time.Now().UnixMilli(); nowMs-l.lastWarnMs >= warnEvery.Milliseconds() || l.lastWarnMs == 0 {
			l.lastWarnMs = nowMs
			l.log.Warn("announce: rejected a connection ID announcement (check the secret, the connection ID length and the clocks)",
				"reason", r.String(), "from", from, "len", n)
			return
		}
	}
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("announce: rejected datagram", "reason", r.String(), "from", from, "len", n)
	}
}
