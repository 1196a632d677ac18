package agent

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/token"
)

// CIDCache is the part of the fast-path connection cache the agent uses:
// it admits connection IDs. Every worker (and ObserveEgress) calls Insert,
// possibly from several goroutines at once, so it must be safe for
// concurrent use. Insert must not keep cid: it aliases the packet buffer.
// It returns an error for a CID it cannot hold (offload/fastpath takes only
// CIDs of its configured length); the agent counts those and still
// forwards the packet, since the host validates it again.
type CIDCache interface {
	Insert(cid []byte) error
}

// CIDLookup is optionally implemented by a CIDCache. With it the agent also
// forwards the client's later Initials (paper figure 7, step 8a): they carry
// the same retry token, but their DCID is the host's chosen SCID, which the
// agent admitted from egress. Without it such Initials are dropped with
// ReasonRSCIDMismatch and the client's handshake relies on its Handshake
// packets, which the fast path passes.
type CIDLookup interface {
	Contains(cid []byte) bool
}

// Defaults for Config.
const (
	DefaultCIDLen            = 8
	DefaultHeartbeatInterval = 100 * time.Millisecond
)

// MinInitialDatagram is the smallest UDP payload that may carry a client
// Initial (RFC 9000 section 14.1); it is also the smallest datagram the
// agent answers with Version Negotiation (section 6.1). The rule is the
// stateless responder's, which the QUIC stack's listener applies too.
const MinInitialDatagram = stateless.MinDatagramSize

// MaxReplyLen bounds the replies Process builds (a Version Negotiation packet
// echoing two 255-byte connection IDs is the longest); give Process an out
// buffer with this capacity so that it never allocates.
const MaxReplyLen = stateless.MaxReplyLen

// ServerIDs is the layout of the server's connection IDs that the agent
// makes its Retry SCIDs in and recognises; *quiclb.Codec implements it.
// (An interface, so that the agent does not import quiclb: quic's own
// tests import the agent, and quiclb imports quic.)
type ServerIDs interface {
	// Len is the ID length.
	Len() int
	// NonceOffset and NonceLen locate the random part.
	NonceOffset() int
	NonceLen() int
	// Seal completes an ID for worker around the nonce in cid.
	Seal(cid []byte, worker int) error
	// Verify reports whether cid is an ID whose MAC the fast path checks
	// by itself.
	Verify(cid []byte) bool
}

// maxIDWorkers is the number of worker indices an ID's worker octet holds.
const maxIDWorkers = 256

// Config configures an Engine.
type Config struct {
	// KeyRing holds the deployment's root secret, shared with the host.
	// Required.
	KeyRing *token.KeyRing
	// Cache receives the connection IDs of admitted connections. Nil means
	// no fast path (host mode): nothing is admitted.
	Cache CIDCache
	// CIDLen is the length of the server's connection IDs, used for the
	// Retry's SCID; 1 to 20, default DefaultCIDLen (IDs.Len() with IDs).
	CIDLen int
	// IDs, when set, is the layout of the server's connection IDs
	// (a *quiclb.Codec). The Retry's SCID is then one of them, for a worker
	// drawn from 0..IDWorkers-1, so the client's later packets to it are
	// steered and, with a MAC, pass the fast path with nothing admitted;
	// an Initial to an ID that verifies is forwarded as one to a known ID.
	IDs ServerIDs
	// IDWorkers is the number of the host's workers (sockets) the Retry
	// SCIDs spread over; 0 means 1.
	IDWorkers int
	// Workers is the number of workers; default 1.
	Workers int
	// KeyCache caches derived token keys for all workers' validators; nil
	// makes one of token.DefaultCacheEntries.
	KeyCache *token.KeyCache
	// RetryMaxAge, NewTokenMaxAge and MaxFuture tune token validation; zero
	// values take the token package's defaults.
	RetryMaxAge    time.Duration
	NewTokenMaxAge time.Duration
	MaxFuture      time.Duration
	// ReplayFilter makes new_token tokens single-use across the workers
	// (RFC 9000 section 8.1.4); it needs a Cache that implements
	// CIDLookup, to tell a connection's later Initials from replays. Nil
	// means a private one remembering tokens for NewTokenMaxAge plus
	// MaxFuture (token.ReplayFilterConfig defaults otherwise).
	ReplayFilter *token.ReplayFilter
	// HeartbeatInterval is RunHeartbeat's period; default
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// PrefixRate limits the validated Initials each source prefix may
	// send (issue 27); the zero value is off. An Initial with a token from
	// a prefix over its rate is answered with CONNECTION_REFUSED
	// (prefixrate.Refuse) or dropped (prefixrate.Drop) without validating
	// the token, unless it belongs to a connection attempt that took its
	// token earlier; an attempt's first validated Initial takes a token
	// from its prefix, its other datagrams none.
	PrefixRate prefixrate.Config
	// OnPrefixEmpty, if set, is called when a validated Initial empties its
	// prefix's bucket, with Unix nanoseconds of the packet's time (the
	// datapath hands the prefix to the XDP program, which then refuses
	// the prefix's Initials itself). It runs on a worker goroutine, outside
	// the agent's locks, and must not block for long.
	OnPrefixEmpty prefixrate.EmptyFunc
	// OnAttemptAdmitted, if set, is called when a connection attempt
	// takes its prefix's token (its first validated Initial; dcid is its
	// DCID, valid only during the call): the datapath hands it to the XDP
	// program, which then lets the attempt's other Initials through while
	// the prefix is over. It runs on a worker goroutine, outside the
	// agent's locks.
	OnAttemptAdmitted func(prefix netip.Prefix, dcid []byte)
	// OnHeartbeat, if set, is called with each heartbeat's time (for
	// example to write it where the fast path reads it). It runs on the
	// heartbeat goroutine and must not block for long.
	OnHeartbeat func(time.Time)
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if cfg.KeyRing == nil {
		return cfg, errors.New("agent: Config.KeyRing is required")
	}
	if cfg.CIDLen == 0 {
		cfg.CIDLen = DefaultCIDLen
		if cfg.IDs != nil {
			cfg.CIDLen = cfg.IDs.Len()
		}
	}
	if cfg.IDs != nil && cfg.IDs.Len() != cfg.CIDLen {
		return cfg, fmt.Errorf("agent: connection IDs of %d bytes, but CIDLen %d", cfg.IDs.Len(), cfg.CIDLen)
	}
	if cfg.IDWorkers == 0 {
		cfg.IDWorkers = 1
	}
	if cfg.IDWorkers < 0 || cfg.IDWorkers > maxIDWorkers {
		return cfg, fmt.Errorf("agent: IDWorkers %d outside 1..%d", cfg.IDWorkers, maxIDWorkers)
	}
	if cfg.CIDLen < 1 || cfg.CIDLen > wire.MaxConnIDLen {
		return cfg, fmt.Errorf("agent: CIDLen %d outside 1..%d", cfg.CIDLen, wire.MaxConnIDLen)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.Workers < 0 {
		return cfg, fmt.Errorf("agent: negative worker count %d", cfg.Workers)
	}
	if cfg.RetryMaxAge < 0 || cfg.NewTokenMaxAge < 0 || cfg.MaxFuture < 0 || cfg.HeartbeatInterval < 0 {
		return cfg, errors.New("agent: negative duration in Config")
	}
	if cfg.KeyCache == nil {
		cfg.KeyCache = token.NewKeyCache(0)
	}
	if cfg.ReplayFilter == nil {
		window := cmp.Or(cfg.NewTokenMaxAge, token.DefaultNewTokenMaxAge) + cmp.Or(cfg.MaxFuture, token.DefaultMaxFuture)
		var err error
		if cfg.ReplayFilter, err = token.NewReplayFilter(token.ReplayFilterConfig{Window: window}); err != nil {
			return cfg, fmt.Errorf("agent: %w", err)
		}
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	var err error
	if cfg.PrefixRate, err = cfg.PrefixRate.WithDefaults(); err != nil {
		return cfg, fmt.Errorf("agent: %w", err)
	}
	return cfg, nil
}
