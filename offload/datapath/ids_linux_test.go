package datapath

import (
	"bytes"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/xdp"
	"github.com/turboretry/turboretry/quiclb"
)

// TestAuthenticatedIDs: with the server's ID layout (MAC from the root
// secret), the agent's Retry SCID is a server ID, the retried Initial is
// delivered, and short-header packets to that ID and to any other server
// ID pass the program on their MAC with the cache left empty; Admit of a
// server ID inserts nothing, while a random ID is still dropped.
func TestAuthenticatedIDs(t *testing.T) {
	kr := testKeyRing(t)
	key := quiclb.KeyFromRing(kr)
	ids, err := quiclb.NewCodec(quiclb.Config{HostID: []byte{0x07}, MACKey: &key})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) { c.IDs, c.IDWorkers = ids, 2 }, hangGuard)
	dcid, scid := randomCID(t, 8), randomCID(t, 8)
	env.send(t, clientInitial(t, dcid, scid))
	buf := make([]byte, 2048)
	n, err := readUDP(env.client, buf)
	if err != nil {
		t.Fatalf("client got no Retry: %v (stats %+v)", err, env.stats(t))
	}
	rscid, tok := env.checkRetry(t, buf[:n], dcid, scid)
	if w, ok := ids.Worker(rscid); !ok || w >= 2 {
		t.Fatalf("Retry SCID %x is no server ID of worker 0..1 (%d, %v)", rscid, w, ok)
	}
	second := initialWithToken(t, rscid, scid, tok)
	env.send(t, second)
	select {
	case d := <-env.delivered:
		if !bytes.Equal(d.pkt, second) {
			t.Fatal("Deliver got another datagram than the retried Initial")
		}
	case <-time.After(hangGuard):
		t.Fatalf("the retried Initial never reached Deliver (stats %+v)", env.stats(t))
	}
	other, _ := ids.Append(nil, 1)
	if err := env.dp.Admit(other); err != nil || !env.dp.Verifies(other) || !env.dp.Admitted(other) {
		t.Fatalf("Admit(server ID): %v, verifies %v", err, env.dp.Verifies(other))
	}
	cache := env.dp.prog.Cache()
	if cache.Lookup(rscid) || cache.Lookup(other) {
		t.Fatal("a server ID was inserted into the cache")
	}
	unknown := randomCID(t, ids.Len())
	// One queue: frames in order, so the kernel socket reads exactly the
	// two server-ID packets, not the unknown one between them.
	env.send(t, shortHeader(rscid, 0x11))
	env.send(t, shortHeader(unknown, 0xee))
	env.send(t, shortHeader(other, 0x22))
	for _, want := range [][]byte{shortHeader(rscid, 0x11), shortHeader(other, 0x22)} {
		n, err := readUDP(env.server, buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("kernel socket: %x..., %v; want the packet to %x", buf[:min(n, 16)], err, want[1:1+ids.Len()])
		}
	}
	s := env.waitStats(t, "the agent's counters", func(s Stats) bool {
		return s.Agent.Packets[agent.ReasonRetryTokenForwarded] == 1
	})
	if s.XDP[xdp.PassMAC] != 2 || s.XDP[xdp.DropMiss] != 1 || s.XDP[xdp.PassHit] != 0 {
		t.Errorf("XDP counters: pass_mac %d drop_miss %d pass_hit %d; want 2, 1, 0", s.XDP[xdp.PassMAC], s.XDP[xdp.DropMiss], s.XDP[xdp.PassHit])
	}
}
