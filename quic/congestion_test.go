package quic

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
	"github.com/turboretry/turboretry/internal/wire"
)

// ccDownload has a server send size bytes on one stream to quic-go's
// client over s: ours with conf, or quic-go's when conf is nil. It returns
// the virtual time from the request to the FIN.
func ccDownload(t *testing.T, s *sim, conf *Config, size int) time.Duration {
	t.Helper()
	d, _ := downloadToQuicGo(t, s, conf == nil, conf, size)
	return d
}

// hystartLink is a 10 ms RTT, 20 MB/s path whose bottleneck queue holds
// queueDelay: 20 ms is two bandwidth-delay products, 50 ms five.
func hystartLink(queueDelay time.Duration) simnet.LinkConfig {
	return simnet.LinkConfig{Delay: 5 * time.Millisecond, Bandwidth: 20 << 20, QueueDelay: queueDelay}
}

// TestHyStartAvoidsQueueOverflow downloads 4 MiB from our server with
// each controller over hystartLink. Slow start that ends only at a loss
// overshoots the queue by hundreds of datagrams; HyStart++ sees the RTT
// rise as the queue fills and from there grows at a quarter of the rate
// (Conservative Slow Start), so that the overflow ending slow start costs
// far less, or none once the queue holds what CSS adds.
//
// Queue drops, with either controller unless told (docs/performance.md):
//
//	queue  before (NewReno, IW 10)  IW 32 without HyStart++   now
//	20 ms  421                      708 CUBIC, 494 NewReno    191
//	50 ms  510                      603 CUBIC, 479 NewReno    26
func TestHyStartAvoidsQueueOverflow(t *testing.T) {
	for _, tc := range []struct {
		queue    time.Duration
		maxDrops int
	}{
		{20 * time.Millisecond, 300},
		{50 * time.Millisecond, 120},
	} {
		for _, cc := range []CongestionControl{CongestionCubic, CongestionNewReno} {
			t.Run(fmt.Sprintf("%v/%v", tc.queue, cc), func(t *testing.T) {
				simTest(t, hystartLink(tc.queue), func(t *testing.T, s *sim) {
					elapsed := ccDownload(t, s, &Config{CongestionControl: cc}, 4<<20)
					ns := s.net.Stats()
					t.Logf("%v virtual; network %+v", elapsed, ns)
					if ns.QueueDrops > tc.maxDrops {
						t.Fatalf("%d datagrams dropped by the bottleneck queue, want at most %d", ns.QueueDrops, tc.maxDrops)
					}
				})
			})
		}
	}
}

// TestZeroRTTFirstFlightFillsInitialWindow: a resuming client's 0-RTT data
// leaves in one flight as large as the initial window (32 datagrams):
// nothing is paced before the first RTT sample, as in quic-go, whose
// Test0RTTTransfer wants more than 20 0-RTT packets. With the pacer's
// 10-datagram burst applied from the start, the flight was 9 datagrams.
func TestZeroRTTFirstFlightFillsInitialWindow(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		stls := serverTLS(t)
		stls.SetSessionTicketKeys([][32]byte{{7, 8, 9}})
		tr := s.serverTransport(nil)
		_, res := earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, stls)
		ctls, cache := resumingClientTLS(t)
		ctr := s.transport(simClientAddr(1))
		c, err := ctr.Dial(ctx, tr.Conn.LocalAddr(), ctls, nil)
		if err != nil {
			t.Fatal(err)
		}
		echoOnNewStream(t, c.OpenStream, []byte("for a session ticket"))
		recvResult(t, ctx, res)
		waitSignal(t, ctx, cache.put, "session ticket")
		_ = c.CloseWithError(0, "")

		// The datagrams with 0-RTT packets that leave the client at the
		// instant of the first: its first flight.
		var mu sync.Mutex
		var first time.Time
		flight := 0
		s.tap(func(p *simnet.Packet) bool {
			if p.From != simClientAddr(1) || !has0RTTPacket(p.Data) {
				return true
			}
			mu.Lock()
			defer mu.Unlock()
			if first.IsZero() {
				first = time.Now()
			}
			if time.Now().Equal(first) {
				flight++
			}
			return true
		})
		c, err = ctr.DialEarly(ctx, tr.Conn.LocalAddr(), ctls, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		msg := make([]byte, 100<<10)
		st := writeOnNewStream(t, c.OpenStream, msg)
		if r := recvResult(t, ctx, res); !r.used0RTT || len(r.data) != len(msg) {
			t.Fatalf("server: Used0RTT %v, %d bytes", r.used0RTT, len(r.data))
		}
		if got, err := io.ReadAll(st); err != nil || len(got) != len(msg) {
			t.Fatalf("echo: %d bytes, %v", len(got), err)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("first flight: %d datagrams with 0-RTT packets", flight)
		if flight < 30 {
			t.Fatalf("first flight carried 0-RTT data in %d datagrams, want at least 30", flight)
		}
	})
}

// has0RTTPacket reports whether a datagram holds a 0-RTT packet.
func has0RTTPacket(d []byte) bool {
	for pkt, err := range coalesced.Packets(d) {
		if err != nil {
			return false
		}
		var hdr wire.LongHeader
		if wire.ParseLongHeader(pkt, &hdr) == nil && hdr.Type == wire.PacketType0RTT {
			return true
		}
	}
	return false
}

func TestCongestionControlConfig(t *testing.T) {
	if _, err := populateConfig(&Config{CongestionControl: CongestionNewReno + 1}); err == nil {
		t.Fatal("an unknown CongestionControl was accepted")
	}
	for cc, want := range map[CongestionControl]string{
		CongestionCubic:   "*congestion.Cubic",
		CongestionNewReno: "*congestion.NewReno",
	} {
		conf, err := populateConfig(&Config{CongestionControl: cc})
		if err != nil {
			t.Fatal(err)
		}
		r := recovery.New(conf.recoveryConfig(true))
		if got := fmt.Sprintf("%T", r.Controller()); got != want {
			t.Errorf("%v: controller %s, want %s", cc, got, want)
		}
		// A new path gets the same kind of controller.
		r.OnPathChanged(time.Now())
		if got := fmt.Sprintf("%T", r.Controller()); got != want {
			t.Errorf("%v after a path change: controller %s, want %s", cc, got, want)
		}
	}
}

// ccTableEnv, set to 1, makes TestCongestionControlTable print the table
// in docs/performance.md ("Congestion control"):
//
//	CC_TABLE=1 go test -count=1 -run TestCongestionControlTable -v ./quic/
const ccTableEnv = "CC_TABLE"

// TestCongestionControlTable downloads 10 MiB over a grid of simnet paths
// from our server with each controller and from quic-go's, to quic-go's
// client, and prints goodput in virtual time and what the network
// dropped. The paths run at 20 MB/s with RTTs of 10, 50 and 200 ms,
// random loss of 0 or 1% on every link, and a bottleneck queue of one
// bandwidth-delay product (a queue delay of one RTT) or of 20 ms.
func TestCongestionControlTable(t *testing.T) {
	if os.Getenv(ccTableEnv) != "1" {
		t.Skipf("set %s=1 to measure", ccTableEnv)
	}
	const size = 10 << 20
	servers := []struct {
		name string
		conf *Config // nil: quic-go
	}{
		{"cubic", &Config{CongestionControl: CongestionCubic}},
		{"newreno", &Config{CongestionControl: CongestionNewReno}},
		{"quic-go", nil},
	}
	var out strings.Builder
	fmt.Fprintf(&out, "| RTT | loss | queue | server | MB/s | queue drops | lost |\n|---|---|---|---|---|---|---|\n")
	for _, rtt := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond} {
		for _, loss := range []float64{0, 0.01} {
			for _, queue := range []time.Duration{rtt, 20 * time.Millisecond} {
				queueName := "1 BDP"
				if queue != rtt {
					queueName = "20 ms"
				}
				link := simnet.LinkConfig{Delay: rtt / 2, Loss: loss, Bandwidth: 20 << 20, QueueDelay: queue}
				for _, srv := range servers {
					simTest(t, link, func(t *testing.T, s *sim) {
						elapsed := ccDownload(t, s, srv.conf, size)
						ns := s.net.Stats()
						fmt.Fprintf(&out, "| %v | %g%% | %s | %s | %.2f | %d | %d |\n",
							rtt, loss*100, queueName, srv.name, float64(size)/(1<<20)/elapsed.Seconds(), ns.QueueDrops, ns.Lost)
					})
				}
			}
		}
	}
	t.Logf("10 MiB downloads to quic-go's client, goodput in MiB per second of virtual time:\n%s", out.String())
}
