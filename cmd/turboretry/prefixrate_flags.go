package main

import (
	"flag"
	"fmt"

	"github.com/turboretry/turboretry/offload/prefixrate"
)

// prefixRateFlags adds the fast path's per-prefix rate flags, named
// pre+"prefix-rate" and so on, to fs; withLens adds the prefix lengths too
// (serve has its own --prefix-len4/6, which the fast path shares). The
// returned function builds the prefixrate.Config after parsing.
func prefixRateFlags(fs *flag.FlagSet, pre string, withLens bool) func(len4, len6 int) (prefixrate.Config, error) {
	rate := fs.Float64(pre+"prefix-rate", 0, "connection attempts (validated first Initials; a ClientHello in two datagrams counts once) per second one source prefix may start through the fast path; past it they are refused or dropped before the host sees them (see --"+pre+"prefix-action); 0: no limit")
	burst := fs.Int(pre+"prefix-burst", 0, "connection attempts one source prefix may start at once before --"+pre+"prefix-rate applies; 0: twice the rate")
	action := fs.String(pre+"prefix-action", "refuse", "what an over-rate Initial gets (`ACTION`): refuse (CONNECTION_REFUSED, built by the agent) or drop (in the XDP program)")
	maxPrefixes := fs.Int(pre+"max-prefixes", prefixrate.DefaultMaxPrefixes, "source prefixes the fast path's rate limit tracks (least recently used ones are forgotten)")
	var l4, l6 *int
	if withLens {
		l4 = fs.Int(pre+"prefix-len4", prefixrate.DefaultPrefixLen4, "group IPv4 clients by this prefix length for --"+pre+"prefix-rate")
		l6 = fs.Int(pre+"prefix-len6", prefixrate.DefaultPrefixLen6, "group IPv6 clients by this prefix length for --"+pre+"prefix-rate")
	}
	return func(len4, len6 int) (prefixrate.Config, error) {
		if withLens {
			len4, len6 = *l4, *l6
		}
		act, err := prefixrate.ParseAction(*action)
		if err != nil {
			return prefixrate.Config{}, fmt.Errorf("--%sprefix-action: %w", pre, err)
		}
		if *maxPrefixes < 1 {
			return prefixrate.Config{}, fmt.Errorf("--%smax-prefixes %d: want at least 1", pre, *maxPrefixes)
		}
		cfg := prefixrate.Config{Rate: *rate, Burst: *burst, PrefixLen4: len4, PrefixLen6: len6, MaxPrefixes: *maxPrefixes, Action: act}
		if _, err := cfg.WithDefaults(); err != nil {
			return prefixrate.Config{}, fmt.Errorf("--%sprefix-rate: %w", pre, err)
		}
		return cfg, nil
	}
}
