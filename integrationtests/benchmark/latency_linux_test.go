package benchmark

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// latencyN connections are measured per variant, after latencyWarm
// unmeasured ones.
const (
	latencyN    = 50
	latencyWarm = 5
)

// BenchmarkSetupLatency measures benign connection setup from the client
// namespace, without a flood: the handshake (DialAddr until it returns,
// handshake complete) and the time to the first response of a GET on a
// fresh connection; medians over latencyN connections, in µs.
func BenchmarkSetupLatency(b *testing.B) {
	for _, v := range []variant{hostNoRetry, hostRetry, xdpAgent} {
		b.Run(string(v), func(b *testing.B) {
			n := newBenchNet(b)
			srv := startServer(b, n, v)
			hs, ttfb := make([]time.Duration, 0, latencyN), make([]time.Duration, 0, latencyN)
			for i := range latencyWarm + latencyN {
				h, err := srv.handshake(2 * time.Second)
				if err != nil {
					b.Fatalf("handshake %d: %v", i, err)
				}
				t, err := srv.get(2 * time.Second)
				if err != nil {
					b.Fatalf("GET %d: %v", i, err)
				}
				if i >= latencyWarm {
					hs, ttfb = append(hs, h), append(ttfb, t)
				}
			}
			b.ReportMetric(median(hs), "handshake-µs")
			b.ReportMetric(median(ttfb), "first-response-µs")
		})
	}
}

// handshake dials from the client namespace and returns how long DialAddr
// took (it returns with the handshake complete).
func (s *benchServer) handshake(limit time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tc := s.tls.Clone()
	tc.NextProtos = []string{http3.NextProtoH3}
	var c *quic.Conn
	start := time.Now()
	err := s.net.in(s.net.client, func() (err error) {
		c, err = quic.DialAddr(ctx, netip.AddrPortFrom(ipServer, serverPort).String(), tc, nil)
		return err
	})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	c.CloseWithError(0, "")
	return d, nil
}

// median returns the median of ds in microseconds.
func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Microsecond)
}
