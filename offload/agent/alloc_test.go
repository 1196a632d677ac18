package agent

import (
	"bytes"
	"testing"

	"github.com/turboretry/turboretry/internal/wire"
)

// TestProcessAllocs: the per-packet paths do not allocate, so a flood
// cannot make the agent's garbage collector work.
func TestProcessAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	env := newTestEnv(t, nil)
	tok, rscid := agentRetryToken(t, env)
	hostSCID := []byte{4, 4, 4, 4, 4, 4, 4, 4}
	env.w.ObserveEgress(longPacket(t, wire.PacketTypeInitial, wire.Version1, cscid, hostSCID, 100))
	egress := longPacket(t, wire.PacketTypeHandshake, wire.Version1, cscid, hostSCID, 100)
	cases := []struct {
		name string
		pkt  []byte
		want Reason
	}{
		{"Initial->Retry", clientInitial(t, wire.Version1, odcid, cscid, nil, 1200), ReasonRetry},
		{"v2 Initial->Retry", clientInitial(t, wire.Version2, odcid, cscid, nil, 1200), ReasonRetry},
		{"valid token->Forward", clientInitial(t, wire.Version1, rscid, cscid, tok, 1200), ReasonRetryTokenForwarded},
		{"later Initial->Forward", clientInitial(t, wire.Version1, hostSCID, cscid, tok, 1200), ReasonRetryTokenKnownCID},
		{"bad token->Drop", clientInitial(t, wire.Version1, rscid, cscid, bytes.Repeat([]byte{0x90}, len(tok)), 1200), 0},
		{"VN", unknownVersionPacket(0x1a2a3a4a, odcid, cscid, 1200), ReasonVersionNegotiation},
		{"garbage", []byte{0xc0, 0, 0}, ReasonMalformed},
	}
	out := make([]byte, 0, MaxReplyLen)
	for _, tc := range cases {
		_, r, _ := env.w.Process(tc.pkt, clientAddr, out)
		if tc.want != 0 && r != tc.want {
			t.Fatalf("%s: reason %v", tc.name, r)
		}
		allocs := testing.AllocsPerRun(200, func() { env.w.Process(tc.pkt, clientAddr, out) })
		if allocs != 0 {
			t.Errorf("%s: %v allocations per packet", tc.name, allocs)
		}
	}
	if a := testing.AllocsPerRun(200, func() { env.w.ObserveEgress(egress) }); a != 0 {
		t.Errorf("ObserveEgress: %v allocations", a)
	}
}
