package main

import (
	"encoding/hex"
	"flag"
	"fmt"

	"github.com/turboretry/turboretry/quiclb"
)

// cidFlags are the connection-ID layout flags serve and agent share: the
// host's IDs and the agent's view of them must agree (docs/cid.md).
type cidFlags struct {
	configID *uint
	hostID   *string
	nonceLen *int
	fastpath *string
}

func addCIDFlags(fs *flag.FlagSet) *cidFlags {
	return &cidFlags{
		configID: fs.Uint("cid-config-id", 0, "QUIC-LB config rotation codepoint `N` of the server's connection IDs (0..6)"),
		hostID:   fs.String("cid-host-id", "", "this server's part of the QUIC-LB server ID in the connection IDs, `HEX` (0..13 bytes; a load balancer routes on it)"),
		nonceLen: fs.Int("cid-nonce-len", quiclb.DefaultNonceLen, "random `BYTES` per connection ID (4..; the IDs are 6 bytes plus this and the host ID)"),
		fastpath: fs.String("fastpath", "mac", "how the fast path knows the server's connection IDs (`MODE`: mac, by their 32-bit MAC; bloom, the paper's cache of admitted IDs)"),
	}
}

// layout returns the configured layout (without the MAC key, which derives
// from the root secret) and whether the fast path uses the cache only.
func (f *cidFlags) layout() (cfg quiclb.Config, cacheOnly bool, err error) {
	if *f.configID >= quiclb.UnroutableConfigID {
		return cfg, false, fmt.Errorf("--cid-config-id %d: want 0..6", *f.configID)
	}
	host, err := hex.DecodeString(*f.hostID)
	if err != nil {
		return cfg, false, fmt.Errorf("--cid-host-id: %v", err)
	}
	switch *f.fastpath {
	case "mac":
	case "bloom":
		cacheOnly = true
	default:
		return cfg, false, fmt.Errorf("--fastpath %q: want mac or bloom", *f.fastpath)
	}
	cfg = quiclb.Config{ConfigID: uint8(*f.configID), HostID: host, NonceLen: *f.nonceLen}
	// Check the lengths now, with a stand-in key.
	check := cfg
	check.MACKey = new(quiclb.Key)
	if _, err := quiclb.NewCodec(check); err != nil {
		return cfg, false, fmt.Errorf("--cid-*: %v", err)
	}
	return cfg, cacheOnly, nil
}
