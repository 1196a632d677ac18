package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/offload/prefixrate"
	"github.com/turboretry/turboretry/quiclb"
)

// DefaultStaleAfter is the heartbeat bound used when Config.StaleAfter is
// zero: an agent beating once per second misses one beat before the fast
// path fails open.
const DefaultStaleAfter = 2 * time.Second

// DefaultQueues is the number of AF_XDP socket slots (receive queues) used
// when Config.Queues is zero.
const DefaultQueues = 64

// maxQueues bounds Config.Queues; NICs have far fewer receive queues.
const maxQueues = 4096

// Config is what the program needs before it is attached.
type Config struct {
	// Port is the server's UDP port (required).
	Port uint16
	// CIDLen is the server's fixed connection ID length, 1..20; 0 means
	// IDs.Len() with IDs, else fastpath.DefaultCIDLen.
	CIDLen int
	// IDs, when set with a MAC, are the server's authenticated connection
	// IDs: a DCID of theirs whose MAC verifies passes with no cache entry
	// (PassMAC). Their length must be CIDLen. Nil: the cache decides alone.
	IDs *quiclb.Codec
	// Key is the cache's SipHash key (fastpath.DeriveKey).
	Key fastpath.Key
	// StaleAfter is how old the heartbeat may be before the program passes
	// everything; 0 means DefaultStaleAfter.
	StaleAfter time.Duration
	// Queues is the number of AF_XDP socket slots, one per receive queue;
	// 0 means DefaultQueues.
	Queues int
	// PrefixRate, when on, makes the program refuse (prefixrate.Refuse:
	// leave to the agent, AgentPrefixRate) or drop (DropPrefixRate) the
	// Initials carrying a token from a source prefix whose bucket is
	// empty. Only the agent takes tokens ([Program.PrefixEmptied]); the
	// program reads the buckets and refills them with its clock. Give the
	// agent the same Config. Its MaxPrefixes sizes the LRU map.
	PrefixRate prefixrate.Config
}

var errNoPort = errors.New("xdp: Config.Port is required")

// withDefaults validates cfg and fills its zero fields.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Port == 0 {
		return cfg, errNoPort
	}
	if cfg.IDs != nil && !cfg.IDs.HasMAC() {
		return cfg, errors.New("xdp: Config.IDs without a MAC: the program could not verify them")
	}
	if cfg.CIDLen == 0 {
		cfg.CIDLen = fastpath.DefaultCIDLen
		if cfg.IDs != nil {
			cfg.CIDLen = cfg.IDs.Len()
		}
	}
	if cfg.IDs != nil && cfg.IDs.Len() != cfg.CIDLen {
		return cfg, fmt.Errorf("xdp: connection IDs of %d bytes, but CIDLen %d", cfg.IDs.Len(), cfg.CIDLen)
	}
	if cfg.CIDLen < 1 || cfg.CIDLen > fastpath.MaxCIDLen {
		return cfg, fmt.Errorf("xdp: CID length %d outside 1..%d", cfg.CIDLen, fastpath.MaxCIDLen)
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.StaleAfter < 0 {
		return cfg, fmt.Errorf("xdp: negative StaleAfter %v", cfg.StaleAfter)
	}
	if cfg.Queues == 0 {
		cfg.Queues = DefaultQueues
	}
	if cfg.Queues < 0 || cfg.Queues > maxQueues {
		return cfg, fmt.Errorf("xdp: Queues %d outside 1..%d", cfg.Queues, maxQueues)
	}
	var err error
	if cfg.PrefixRate, err = cfg.PrefixRate.WithDefaults(); err != nil {
		return cfg, fmt.Errorf("xdp: %w", err)
	}
	return cfg, nil
}

// mapConfig is the tr_config value the program reads.
func (cfg Config) mapConfig() fastpathTrXdpConfig {
	// SipHash k0/k1: the key's halves read little-endian, as in
	// tr_fp_key_from_bytes and fastpath.Key.
	mc := fastpathTrXdpConfig{
		K0:      binary.LittleEndian.Uint64(cfg.Key[:8]),
		K1:      binary.LittleEndian.Uint64(cfg.Key[8:]),
		StaleNs: uint64(cfg.StaleAfter.Nanoseconds()),
		CidLen:  uint32(cfg.CIDLen),
		Port:    uint32(cfg.Port),
	}
	if pr := cfg.PrefixRate; pr.Enabled() {
		mc.PrefixIntervalNs = uint64(pr.Interval())
		mc.PrefixToleranceNs = uint64(pr.Tolerance())
		mc.PrefixLen4 = uint32(pr.PrefixLen4)
		mc.PrefixLen6 = uint32(pr.PrefixLen6)
		if pr.Action == prefixrate.Drop {
			mc.PrefixDrop = 1
		}
	}
	if cfg.IDs != nil {
		k, _ := cfg.IDs.MACKey()
		mc.Cid.Key.K0 = binary.LittleEndian.Uint64(k[:8])
		mc.Cid.Key.K1 = binary.LittleEndian.Uint64(k[8:])
		mc.Cid.Len = uint32(cfg.IDs.Len())
		mc.Cid.ConfigId = uint32(cfg.IDs.ConfigID())
		mc.Cid.WorkerOff = uint32(cfg.IDs.WorkerOffset())
	}
	return mc
}
