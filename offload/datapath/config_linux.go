package datapath

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/offload/afxdp"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/offload/xdp"
	"github.com/turboretry/turboretry/quiclb"
	"github.com/turboretry/turboretry/token"
)

// DefaultRotateEvery is the fast-path rotation period used when
// Config.RotateEvery is zero: T_W of docs/design.md.
const DefaultRotateEvery = fastpath.DefaultWindow

// DeliverFunc receives a datagram the agent validated (a Forward verdict):
// pkt is the UDP payload, from the client's address and to the server
// address it was sent to. pkt aliases the receive frame and is valid only
// during the call: copy it to keep it. It runs on the queue's worker
// goroutine, so it must not block for long; everything behind it on the
// queue waits.
type DeliverFunc func(pkt []byte, from, to netip.AddrPort)

// ForwardFunc receives a validated Initial as the whole, unchanged Ethernet
// frame it arrived in (the split mode, which bridges it on to the host
// port). frame aliases the receive frame and is valid only during the
// call. It runs on the queue's worker goroutine, like DeliverFunc.
type ForwardFunc func(frame []byte)

// Config configures a Datapath.
type Config struct {
	// Iface is the name of the interface the server receives on. Required.
	Iface string
	// Queues is the number of receive queues to serve, 0..Queues-1; 0 means
	// all the interface uses (its ethtool channel count). Initials arriving
	// on a queue not served pass to the kernel stack (xdp.PassNoSocket).
	Queues int
	// Port is the server's UDP port. Required.
	Port uint16
	// KeyRing holds the root secret the host validates tokens with.
	// Required.
	KeyRing *token.KeyRing
	// CIDLen is the server's connection ID length (agent and fast path),
	// which the QUIC server must use too; 0 means IDs.Len() with IDs, else
	// agent.DefaultCIDLen.
	CIDLen int
	// IDs, when set, is the layout of the server's connection IDs (package
	// quiclb): with a MAC the fast path passes the server's IDs on their
	// MAC alone (nothing admitted, xdp.PassMAC), and the agent's Retry
	// SCIDs are such IDs too, spread over IDWorkers workers. Nil (or no
	// MAC): every ID goes through the cache, the paper's mode.
	IDs *quiclb.Codec
	// IDWorkers is the number of the server's workers (agent.Config).
	IDWorkers int
	// CacheOnly keeps every ID in the cache even with IDs that carry a MAC
	// (the paper's mode): the program does not verify the MAC, Admit
	// inserts every ID, the agent admits its Retry SCIDs.
	CacheOnly bool
	// CacheKey is the fast-path cache's SipHash key. The zero key means the
	// one docs/design.md derives from the root secret (fastpath.KeyFromRing), so
	// every loader of one deployment (XDP, the DPA) hashes alike.
	CacheKey fastpath.Key
	// XDPMode is how the program attaches (xdp.ModeAuto: native where the
	// driver supports it).
	XDPMode xdp.AttachMode
	// Socket sizes each queue's UMEM and rings; the zero value means
	// DefaultSocket, and zero fields of another value take afxdp's
	// defaults.
	Socket afxdp.Config
	// StaleAfter is how old the heartbeat may grow before the program fails
	// open; 0 means xdp.DefaultStaleAfter.
	StaleAfter time.Duration
	// HeartbeatInterval is how often the agent beats; 0 means four times
	// per StaleAfter, and at least every agent.DefaultHeartbeatInterval.
	// It must be below StaleAfter.
	HeartbeatInterval time.Duration
	// RotateEvery is the fast-path cache rotation period; 0 means
	// DefaultRotateEvery.
	RotateEvery time.Duration
	// Deliver takes the Initials the agent validated as UDP payloads: the
	// integrated mode's hook into the QUIC transport. Exactly one of
	// Deliver and Forward must be set.
	Deliver DeliverFunc
	// Forward takes the Initials the agent validated as whole Ethernet
	// frames: the split mode's hook, which sends them out of the host
	// port. Exactly one of Deliver and Forward must be set.
	Forward ForwardFunc
	// PrefixRate limits the validated Initials per source prefix (issue
	// 27) in both the agent (which takes the tokens) and the XDP program
	// (which drops, or leaves to the agent to refuse, the Initials with a
	// token of a prefix whose bucket is empty); the zero value is off.
	PrefixRate prefixrate.Config
	// Logger receives start, stop and failure messages; nil discards them.
	Logger *slog.Logger
}

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Iface == "":
		return c, fmt.Errorf("%w: no interface", ErrConfig)
	case c.Port == 0:
		return c, fmt.Errorf("%w: no port", ErrConfig)
	case c.KeyRing == nil:
		return c, fmt.Errorf("%w: no key ring", ErrConfig)
	case c.Deliver == nil && c.Forward == nil:
		return c, fmt.Errorf("%w: neither Deliver nor Forward set (validated Initials would be lost)", ErrConfig)
	case c.Deliver != nil && c.Forward != nil:
		return c, fmt.Errorf("%w: both Deliver and Forward set (a validated Initial goes to exactly one)", ErrConfig)
	case c.Queues < 0:
		return c, fmt.Errorf("%w: %d queues", ErrConfig, c.Queues)
	case c.CIDLen < 0 || c.CIDLen > fastpath.MaxCIDLen:
		return c, fmt.Errorf("%w: connection ID length %d (want 1..%d)", ErrConfig, c.CIDLen, fastpath.MaxCIDLen)
	case c.StaleAfter < 0 || c.RotateEvery < 0 || c.HeartbeatInterval < 0:
		return c, fmt.Errorf("%w: negative StaleAfter, HeartbeatInterval or RotateEvery", ErrConfig)
	}
	if c.CIDLen == 0 {
		c.CIDLen = agent.DefaultCIDLen
		if c.IDs != nil {
			c.CIDLen = c.IDs.Len()
		}
	}
	if c.Socket == (afxdp.Config{}) {
		c.Socket = DefaultSocket
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = xdp.DefaultStaleAfter
	}
	if c.HeartbeatInterval == 0 {
		// Four beats per StaleAfter: one late beat does not fail open.
		c.HeartbeatInterval = max(min(agent.DefaultHeartbeatInterval, c.StaleAfter/4), time.Millisecond)
	}
	if c.HeartbeatInterval >= c.StaleAfter {
		return c, fmt.Errorf("%w: heartbeat interval %v not below StaleAfter %v (the program would fail open between beats)",
			ErrConfig, c.HeartbeatInterval, c.StaleAfter)
	}
	if c.RotateEvery == 0 {
		c.RotateEvery = DefaultRotateEvery
	}
	if c.CacheKey == (fastpath.Key{}) && c.KeyRing != nil {
		c.CacheKey = fastpath.KeyFromRing(c.KeyRing)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Errors of Start, wrapped with the detail and the underlying error; match
// them with errors.Is.
var (
	// ErrConfig: the Config is invalid.
	ErrConfig = errors.New("datapath: invalid config")
	// ErrPermission: the process may not load XDP programs or open AF_XDP
	// sockets; run as root (or with CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN
	// and CAP_NET_RAW).
	ErrPermission = errors.New("datapath: permission denied (run as root)")
	// ErrNoInterface: no interface of that name in the caller's network
	// namespace.
	ErrNoInterface = errors.New("datapath: no such interface")
	// ErrLoad: the XDP program could not be loaded or attached.
	ErrLoad = errors.New("datapath: XDP program")
	// ErrSocket: an AF_XDP socket could not be opened or registered.
	ErrSocket = errors.New("datapath: AF_XDP socket")
)
