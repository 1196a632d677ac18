package fileserver

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/token"
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
		CIDLen: agent.DefaultCIDLen,
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

// TestSplitOffloadAnnouncesConnectionIDs: with --offload split the server
// announces every connection ID of its length that it routes (handshake
// SCIDs and NEW_CONNECTION_ID ones) to the agent's control address, under
// the key derived from its root secret (the agent's listener accepts
// only those), and exports its counters.
func TestSplitOffloadAnnouncesConnectionIDs(t *testing.T) {
	var (
		mu       sync.Mutex
		admitted [][]byte
	)
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = byte(i)
	}
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	kr, err := token.NewKeyRing(secret, 0)
	if err != nil {
		t.Fatal(err)
	}
	ac := startAgentControl(t, announce.Key(kr))
	ts := startServer(t, func(c *Config) {
		c.SecretFile = secretFile
		c.MetricsAddr = "127.0.0.1:0"
		c.Offload = host.Config{Mode: host.ModeSplit, AgentControl: ac.addr, Admitted: func(cid []byte, _ error) {
			if len(cid) == agent.DefaultCIDLen {
				mu.Lock()
				admitted = append(admitted, bytes.Clone(cid))
				mu.Unlock()
			}
		}}
	})

	tr := &http3.Transport{TLSClientConfig: ts.h3TLS()}
	defer tr.Close()
	ts.h3Fetch(t, tr, "/")
	mu.Lock()
	ids := append([][]byte(nil), admitted...)
	mu.Unlock()
	if len(ids) < 2 {
		t.Fatalf("the server routed %d IDs of length %d, want the handshake SCID and spares", len(ids), agent.DefaultCIDLen)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range ids {
		for !ac.has(id) {
			if time.Now().After(deadline) {
				t.Fatalf("connection ID %x never reached the agent; listener stats %+v", id, ac.l.Stats())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	_, h1 := ts.clients(t)
	_, body := get(t, h1, "GET", "http://"+ts.MetricsAddr().String()+"/metrics")
	fams := parseMetrics(t, body)
	if v, _ := fams.value("turboretry_split_announced_cids_total"); v < float64(len(ids)) {
		t.Errorf("/metrics counts %v announced IDs, want at least %d", v, len(ids))
	}
	checkDashboardQueries(t, fams, host.ModeSplit)
}
