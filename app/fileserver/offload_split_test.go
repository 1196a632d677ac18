package fileserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/quiclb"
)

// agentControl is the agent's side of the split mode's control channel:
// an announce.Listener on loopback recording the IDs it accepted.
type agentControl struct {
	l    *announce.Listener
	addr netip.AddrPort
	mu   sync.Mutex
	cids map[string]bool
}

func startAgentControl(t *testing.T, key [32]byte) *agentControl {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ac := &agentControl{addr: pc.LocalAddr().(*net.UDPAddr).AddrPort(), cids: map[string]bool{}}
	ac.l, err = announce.NewListener(announce.ListenerConfig{
		Conn:   pc,
		Key:    key,
		CIDLen: defaultIDLen,
		Insert: func(cid []byte) {
			ac.mu.Lock()
			ac.cids[string(cid)] = true
			ac.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ac.l.Serve(ctx) }()
	t.Cleanup(func() { cancel(); pc.Close(); <-done })
	return ac
}

func (ac *agentControl) has(cid []byte) bool {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	return ac.cids[string(cid)]
}

// defaultIDLen is the length of the server's connection IDs in the
// default layout (docs/cid.md).
var defaultIDLen = func() int {
	c, err := quiclb.NewCodec(quiclb.Config{MACKey: new(quiclb.Key)})
	if err != nil {
		panic(err)
	}
	return c.Len()
}()

// TestSplitOffloadAnnouncesConnectionIDs: with --offload split the server
// announces the connection IDs of its length that it routes to the
// agent's control address, under the key derived from its root secret
// (the agent's listener accepts only those), and exports its counters. By
// default its IDs carry a MAC the agent's fast path verifies, so none of
// them is announced (skipped, and counted); in the cache-only mode (the
// paper's: --fastpath bloom) every one is (handshake SCIDs and
// NEW_CONNECTION_ID ones).
func TestSplitOffloadAnnouncesConnectionIDs(t *testing.T) {
	for _, cacheOnly := range []bool{false, true} {
		name := "mac"
		if cacheOnly {
			name = "cache-only"
		}
		t.Run(name, func(t *testing.T) { splitAnnounces(t, cacheOnly) })
	}
}

func splitAnnounces(t *testing.T, cacheOnly bool) {
	var (
		mu       sync.Mutex
		admitted [][]byte
	)
	secret := testutil.Secret(0)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	kr := testutil.KeyRing(t, secret)
	ac := startAgentControl(t, announce.Key(kr))
	ts := startServer(t, func(c *Config) {
		c.SecretFile = secretFile
		c.MetricsAddr = "127.0.0.1:0"
		c.Offload = host.Config{Mode: host.ModeSplit, AgentControl: ac.addr, CacheOnly: cacheOnly, Admitted: func(cid []byte, _ error) {
			if len(cid) == defaultIDLen {
				mu.Lock()
				admitted = append(admitted, bytes.Clone(cid))
				mu.Unlock()
			}
		}}
	})

	tr := ts.h3Transport()
	defer tr.Close()
	ts.h3Fetch(t, tr, "/")
	mu.Lock()
	ids := append([][]byte(nil), admitted...)
	mu.Unlock()
	if len(ids) < 2 {
		t.Fatalf("the server routed %d IDs of length %d, want the handshake SCID and spares", len(ids), defaultIDLen)
	}
	_, h1 := ts.clients(t)
	metrics := func() metricFamilies {
		_, body := get(t, h1, "GET", "http://"+ts.MetricsAddr().String()+"/metrics")
		return parseMetrics(t, body)
	}
	if !cacheOnly {
		testutil.WaitValue(t, fmt.Sprintf("/metrics to count at least %d skipped IDs", len(ids)), 10*time.Second,
			func() float64 { v, _ := metrics().value("turboretry_split_announce_skipped_total"); return v },
			func(v float64) bool { return v >= float64(len(ids)) })
		for _, id := range ids {
			if ac.has(id) {
				t.Errorf("server ID %x, which the agent verifies by MAC, was announced", id)
			}
		}
		checkDashboardQueries(t, metrics(), host.ModeSplit)
		return
	}
	for _, id := range ids {
		testutil.WaitFor(t, fmt.Sprintf("connection ID %x to reach the agent", id), func() bool { return ac.has(id) })
	}
	// The announcer counts a message once its write returned, which can
	// be after the agent has read it.
	announced := func(fams metricFamilies) float64 {
		v, _ := fams.value("turboretry_split_announced_cids_total")
		return v
	}
	fams := testutil.WaitValue(t, fmt.Sprintf("/metrics to count at least %d announced IDs", len(ids)), 10*time.Second,
		metrics, func(fams metricFamilies) bool { return announced(fams) >= float64(len(ids)) })
	checkDashboardQueries(t, fams, host.ModeSplit)
}
