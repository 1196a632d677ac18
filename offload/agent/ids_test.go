package agent

import (
	"bytes"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/quiclb"
)

// TestRetryWithServerIDs: with the server's ID layout, every Retry SCID is
// one of the server's IDs for a worker in range (so the client's later
// packets are steered and pass the fast path on their MAC); the retried
// Initial is forwarded without admitting anything, and a later Initial to
// the host's own SCID (it verifies too) is forwarded as a known one, with
// no egress learning.
func TestRetryWithServerIDs(t *testing.T) {
	kr := testKeyRing(t)
	key := quiclb.KeyFromRing(kr)
	ids, err := quiclb.NewCodec(quiclb.Config{HostID: []byte{0x31}, MACKey: &key})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) { c.IDs, c.IDWorkers = ids, 3 })
	if env.eng.cfg.CIDLen != ids.Len() {
		t.Fatalf("CIDLen %d, want the IDs' %d", env.eng.cfg.CIDLen, ids.Len())
	}
	workers := map[int]bool{}
	var rscid, tok []byte
	for range 60 {
		reply := mustProcess(t, env.w, clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), clientAddr, ReasonRetry)
		var h wire.LongHeader
		if err := wire.ParseLongHeader(reply, &h); err != nil {
			t.Fatal(err)
		}
		w, ok := ids.Worker(h.SrcConnID)
		if !ok || w >= 3 {
			t.Fatalf("Retry SCID %x: worker %d, verifies %v", h.SrcConnID, w, ok)
		}
		workers[w] = true
		rscid, tok = bytes.Clone(h.SrcConnID), bytes.Clone(h.Token)
	}
	if len(workers) != 3 {
		t.Fatalf("60 Retries used workers %v, want all of 0..2", workers)
	}
	mustProcess(t, env.w, clientInitial(t, wire.Version1, rscid, cscid, tok, 1200), clientAddr, ReasonRetryTokenForwarded)
	if env.cache.len() != 0 {
		t.Fatalf("authenticated RSCID admitted to the cache: %v", env.cache.m)
	}
	hostSCID, _ := ids.Append(nil, 2)
	mustProcess(t, env.w, clientInitial(t, wire.Version1, hostSCID, cscid, tok, 1200), clientAddr, ReasonRetryTokenKnownCID)
	forged := bytes.Clone(hostSCID)
	forged[len(forged)-1] ^= 1
	mustProcess(t, env.w, clientInitial(t, wire.Version1, forged, cscid, tok, 1200), clientAddr, ReasonRSCIDMismatch)

	if _, err := New(Config{KeyRing: kr, IDs: ids, CIDLen: 8}); err == nil {
		t.Fatal("New accepted IDs of another length than CIDLen")
	}
	if _, err := New(Config{KeyRing: kr, IDs: ids, IDWorkers: 257}); err == nil {
		t.Fatal("New accepted 257 workers")
	}
}
