package quic

import (
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
)

// lossyLink loses, duplicates and reorders datagrams in both directions.
var lossyLink = simnet.LinkConfig{
	Delay:        10 * time.Millisecond,
	Loss:         0.05,
	Duplicate:    0.02,
	Reorder:      0.05,
	ReorderDelay: 3 * time.Millisecond,
}

// lossyTransfer is how much the lossy tests echo: enough for hundreds of
// losses and every recovery path.
const lossyTransfer = 2 << 20

// checkLossyStats checks that the network really misbehaved and that the
// client's counters saw it.
func checkLossyStats(t *testing.T, s *sim, c *Conn) {
	t.Helper()
	ns := s.net.Stats()
	t.Logf("network: %+v", ns)
	if ns.Lost == 0 || ns.Duplicated == 0 || ns.Reordered == 0 {
		t.Fatalf("the link did not misbehave: %+v", ns)
	}
	if c == nil {
		return
	}
	st := c.ConnectionStats()
	t.Logf("client: %+v", st)
	if st.PacketsLost == 0 || st.BytesSent < lossyTransfer || st.PacketsReceived == 0 {
		t.Fatalf("implausible statistics after a lossy transfer: %+v", st)
	}
}

func TestLossyTransferOursToOurs(t *testing.T) {
	simTest(t, lossyLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, s.ctx(), c, lossyTransfer)
		checkLossyStats(t, s, c)
	})
}

func TestLossyTransferQuicGoClientOurServer(t *testing.T) {
	simTest(t, lossyLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		_, c := s.dialQuicGo(simClientAddr(1), srv.addr)
		echoOver(t, s.ctx(), c, lossyTransfer)
		checkLossyStats(t, s, nil)
	})
}

func TestLossyTransferOurClientQuicGoServer(t *testing.T) {
	simTest(t, lossyLink, func(t *testing.T, s *sim) {
		addr := s.quicGoServer(&quicgo.Config{})
		c := s.dial(simClientAddr(1), addr, nil)
		echoOurs(t, s.ctx(), c, lossyTransfer)
		checkLossyStats(t, s, c)
	})
}
