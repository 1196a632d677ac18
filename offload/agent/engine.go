package agent

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/token"
)

// Engine is a multi-worker Retry agent. New builds the workers; the datapath
// hands each one to its own goroutine (one per RX queue, say) and calls its
// Process for the datagrams of that queue. The workers share the key ring,
// the derived-key cache and the fast-path cache, and nothing else.
type Engine struct {
	cfg Config
	// resp applies the stateless rules (internal/stateless) the QUIC
	// stack's listener applies too: which datagrams get Version
	// Negotiation, which Initials may open a connection, the Retry packet.
	resp    *stateless.Responder
	workers []*Worker
	paused  atomic.Bool
	beat    atomic.Int64 // last heartbeat, Unix nanoseconds; 0 = none yet
	keys    atomic.Pointer[keyGeneration]
	// prefixes is the rate limit by source prefix; nil when off.
	prefixes *prefixrate.Limiter
}

// keyGeneration is the key ring the workers use; SetKeyRing publishes a
// new one and each worker switches before its next datagram.
type keyGeneration struct {
	ring  *token.KeyRing
	cache *token.KeyCache
	gen   uint64
}

// New returns an Engine with cfg.Workers workers, each with its own token
// Issuer (source agent) and Validator.
func New(cfg Config) (*Engine, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// The agent speaks v1 and v2, v1 first, as a quic server does by
	// default.
	resp, err := stateless.New(nil)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: c, resp: resp, workers: make([]*Worker, c.Workers)}
	if e.prefixes, err = prefixrate.NewLimiter(c.PrefixRate, c.OnPrefixEmpty); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	e.keys.Store(&keyGeneration{ring: c.KeyRing, cache: c.KeyCache})
	for i := range e.workers {
		if e.workers[i], err = newWorker(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// SetKeyRing switches every worker to a new key ring (a reloaded root
// secret, which the host must switch to as well): each worker rebuilds its
// Issuer and Validator before its next datagram, with a fresh derived-key
// cache. Tokens of the old secret are refused from then on. It is safe to
// call while the workers run.
func (e *Engine) SetKeyRing(kr *token.KeyRing) error {
	if kr == nil {
		return errors.New("agent: SetKeyRing: nil key ring")
	}
	for {
		old := e.keys.Load()
		next := &keyGeneration{ring: kr, cache: token.NewKeyCache(0), gen: old.gen + 1}
		if e.keys.CompareAndSwap(old, next) {
			return nil
		}
	}
}

// PrefixRateStats returns the prefix rate limit's counters; the zero Stats
// when the limit is off.
func (e *Engine) PrefixRateStats() prefixrate.Stats {
	if e.prefixes == nil {
		return prefixrate.Stats{}
	}
	return e.prefixes.Stats()
}

// NumWorkers returns the number of workers.
func (e *Engine) NumWorkers() int { return len(e.workers) }

// Worker returns worker i (0 <= i < NumWorkers). Use each worker from one
// goroutine only.
func (e *Engine) Worker(i int) *Worker { return e.workers[i] }

// Pause stops the engine, for fail-open tests: Process drops everything
// with ReasonPaused and heartbeats stop, so the fast path sees the heartbeat
// go stale and lets traffic through to the host.
func (e *Engine) Pause() { e.paused.Store(true) }

// Resume undoes Pause.
func (e *Engine) Resume() { e.paused.Store(false) }

// Paused reports whether the engine is paused.
func (e *Engine) Paused() bool { return e.paused.Load() }

// Heartbeat returns the time of the last heartbeat, or the zero time if
// there was none yet.
func (e *Engine) Heartbeat() time.Time {
	ns := e.beat.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Beat records one heartbeat at the current time and calls
// OnHeartbeat, unless the engine is paused. It reports whether it beat.
// RunHeartbeat calls it periodically; a datapath with its own timer may
// call it instead.
func (e *Engine) Beat() bool {
	if e.paused.Load() {
		return false
	}
	now := time.Now()
	e.beat.Store(now.UnixNano())
	if e.cfg.OnHeartbeat != nil {
		e.cfg.OnHeartbeat(now)
	}
	return true
}

// RunHeartbeat beats once at once and then every HeartbeatInterval until
// ctx is done.
func (e *Engine) RunHeartbeat(ctx context.Context) {
	t := time.NewTicker(e.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		e.Beat()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (e *Engine) validatorConfig(cache *token.KeyCache) token.ValidatorConfig {
	return token.ValidatorConfig{
		RetryMaxAge:    e.cfg.RetryMaxAge,
		NewTokenMaxAge: e.cfg.NewTokenMaxAge,
		MaxFuture:      e.cfg.MaxFuture,
		Cache:          cache,
	}
}
