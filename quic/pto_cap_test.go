package quic

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
)

// TestPTOPeriodCapped: once the path becomes a black hole, the client's
// probe timeouts back off exponentially but never beyond a minute, as in
// quic-go, so a connection with a long idle timeout keeps probing at least
// once a minute (without the cap the gaps reach 2 and 4 minutes).
func TestPTOPeriodCapped(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		conf := &Config{MaxIdleTimeout: 6 * time.Minute}
		srv := s.server(nil, conf)
		c := s.dial(simClientAddr(1), srv.addr, conf)
		st, err := c.OpenStreamSync(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		echoCheck(t, st, testData(1000, 3))
		time.Sleep(time.Second)

		var blackHole atomic.Bool
		var mu sync.Mutex
		var probes []time.Time // when the client sent datagrams into it
		s.tap(func(p *simnet.Packet) bool {
			if !blackHole.Load() {
				return true
			}
			if p.From == simClientAddr(1) {
				mu.Lock()
				if n := len(probes); n == 0 || !probes[n-1].Equal(time.Now()) {
					probes = append(probes, time.Now())
				}
				mu.Unlock()
			}
			return false
		})
		blackHole.Store(true)
		st, err = c.OpenStreamSync(s.ctx())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Write([]byte("into the void")); err != nil {
			t.Fatal(err)
		}
		<-c.Context().Done() // the idle timeout

		mu.Lock()
		defer mu.Unlock()
		capped := 0
		for i := 1; i < len(probes); i++ {
			switch gap := probes[i].Sub(probes[i-1]); {
			case gap > time.Minute:
				t.Fatalf("%v between probes %d and %d (sent at %v)", gap, i-1, i, probes)
			case gap == time.Minute:
				capped++
			}
		}
		if capped < 2 {
			t.Fatalf("%d gaps of a minute between the probes sent at %v", capped, probes)
		}
	})
}
