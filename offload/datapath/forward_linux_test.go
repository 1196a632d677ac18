package datapath

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/frame"
)

// TestForwardWholeFrame: with Config.Forward (the split mode), the
// Initial that carries the agent's retry token reaches Forward as the
// whole Ethernet frame the client sent (MACs, IP and UDP headers, payload
// byte for byte), nothing reaches the kernel socket, and the counters say
// forwarded, not delivered.
func TestForwardWholeFrame(t *testing.T) {
	frames := make(chan []byte, 4)
	var mu sync.Mutex
	env := newTestEnv(t, func(c *Config) {
		c.Deliver = nil
		c.Forward = func(frame []byte) {
			mu.Lock()
			defer mu.Unlock()
			select {
			case frames <- bytes.Clone(frame):
			default:
			}
		}
	}, hangGuard)
	dcid, scid := randomCID(t, 8), randomCID(t, 8)
	env.send(t, clientInitial(t, dcid, scid))
	buf := make([]byte, 2048)
	n, err := readUDP(env.client, buf)
	if err != nil {
		env.dump(t)
		t.Fatalf("client got no Retry: %v (stats %+v)", err, env.stats(t))
	}
	rscid, tok := env.checkRetry(t, buf[:n], dcid, scid)
	second := initialWithToken(t, rscid, scid, tok)
	env.send(t, second)
	var fr []byte
	select {
	case fr = <-frames:
	case <-time.After(hangGuard):
		t.Fatalf("the second Initial never reached Forward (stats %+v)", env.stats(t))
	}
	f, err := frame.Parse(fr) // with the UDP checksum: unchanged
	if err != nil {
		t.Fatalf("forwarded frame does not parse with its checksums: %v", err)
	}
	if f.Src != macC || f.Dst != macS || f.SrcIP != ipC || f.DstIP != ipS ||
		f.SrcPort != clientAP.Port() || f.DstPort != portS || !bytes.Equal(f.Payload, second) {
		t.Fatalf("forwarded frame %v/%v %v:%d -> %v:%d, %d payload bytes; want the client's frame with the second Initial",
			f.Src, f.Dst, f.SrcIP, f.SrcPort, f.DstIP, f.DstPort, len(f.Payload))
	}
	if want := frame.EthHeaderLen + frame.IPv4HeaderLen + 8 + len(second); len(fr) != want {
		t.Errorf("forwarded frame is %d bytes, want %d", len(fr), want)
	}
	s := env.waitStats(t, "the agent's counters", func(s Stats) bool {
		return s.Agent.Packets[agent.ReasonRetryTokenForwarded] == 1
	})
	if s.Forwarded != 1 || s.Delivered != 0 {
		t.Errorf("forwarded %d delivered %d; want 1, 0", s.Forwarded, s.Delivered)
	}
	// One queue handles frames in order: if the first datagram the kernel
	// socket reads is the later packet to the admitted RSCID, the
	// forwarded Initial did not get there.
	known := shortHeader(rscid, 0x22)
	env.send(t, known)
	n, err = readUDP(env.server, buf)
	if err != nil {
		t.Fatalf("kernel socket: %v (stats %+v)", err, env.stats(t))
	}
	if !bytes.Equal(buf[:n], known) {
		t.Fatalf("kernel socket got %x..., want the short-header packet to the admitted RSCID", buf[:min(n, 16)])
	}
}
