package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/ethtool"
	"github.com/turboretry/turboretry/internal/netnstest"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/frame"
)

var (
	ipGen     = netip.MustParseAddr("198.18.0.1")
	ipRcv     = netip.MustParseAddr("198.18.0.2")
	target    = netip.AddrPortFrom(ipRcv, 4433)
	spoofTest = netip.MustParsePrefix("198.18.128.0/17")
)

// pair is a generator namespace with gen0 and, in a second namespace, its
// peer rcv0 with GRO on (so the veth takes redirected frames).
type pair struct{ gen, rcv string }

func newPair(t testing.TB) pair {
	t.Helper()
	netnstest.RequireRoot(t, "the live-frames generator (BPF, network namespaces)")
	p := pair{gen: netnstest.New(t, "trl-g"), rcv: netnstest.New(t, "trl-r")}
	netnstest.Veth(t, netnstest.End{NS: p.gen, Dev: "gen0"}, netnstest.End{NS: p.rcv, Dev: "rcv0", MAC: "02:00:5e:00:13:02"})
	netnstest.Up(t, p.gen, "gen0", netip.PrefixFrom(ipGen, 24))
	netnstest.Up(t, p.rcv, "rcv0", netip.PrefixFrom(ipRcv, 24))
	if err := netnstest.In(p.rcv, func() error { return ethtool.SetOffload("rcv0", ethtool.GRO, true) }); err != nil {
		t.Fatal(err)
	}
	netnstest.WaitUp(t, p.gen, "gen0")
	netnstest.WaitUp(t, p.rcv, "rcv0")
	return p
}

// newGen makes a Generator in p.gen, skipping on a kernel without live
// frames or without the program's helpers.
func newGen(t testing.TB, p pair, mode Mode, g *flood.Generator) *Generator {
	t.Helper()
	return newGenCPUs(t, p, mode, g, nil)
}

func newGenCPUs(t testing.TB, p pair, mode Mode, g *flood.Generator, cpus []int) *Generator {
	t.Helper()
	var gen *Generator
	err := netnstest.In(p.gen, func() error {
		var err error
		gen, err = New(Config{Iface: "gen0", Target: target, Spoof: spoofTest, Mode: mode, Generator: g, CPUs: cpus})
		return err
	})
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("New: %+v", err)
	}
	t.Cleanup(func() { gen.Close() })
	return gen
}

// runOnce runs the program once, not live, on the template and returns
// the frame it built.
func runOnce(t *testing.T, p pair, g *Generator) []byte {
	t.Helper()
	out := make([]byte, FrameLen+256)
	var ret uint32
	err := netnstest.In(p.gen, func() error {
		opts := ebpf.RunOptions{Data: g.tmpl.frame, DataOut: out, Context: g.md, Repeat: 1}
		var err error
		ret, err = g.objs.TrFlood.Run(&opts)
		out = opts.DataOut
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const xdpRedirect = 4
	if ret != xdpRedirect {
		t.Fatalf("program returned %d, want XDP_REDIRECT", ret)
	}
	return out
}

func smallGenerator(t *testing.T) *flood.Generator {
	t.Helper()
	g, err := flood.NewGenerator(flood.GeneratorConfig{PoolSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// checkFrame parses f (both checksums verified) and checks the fields the
// program must write.
func checkFrame(t *testing.T, f []byte) frame.UDP {
	t.Helper()
	if len(f) != FrameLen {
		t.Fatalf("frame of %d bytes, want %d", len(f), FrameLen)
	}
	u, err := frame.Parse(f)
	if err != nil {
		t.Fatalf("generated frame does not parse: %v", err)
	}
	if !spoofTest.Contains(u.SrcIP) || u.DstIP != ipRcv || u.DstPort != target.Port() || u.SrcPort < firstPort {
		t.Fatalf("frame %v:%d -> %v:%d, want a source in %v port >= %d to %v", u.SrcIP, u.SrcPort, u.DstIP, u.DstPort, spoofTest, firstPort, target)
	}
	// frame.Parse checks the UDP checksum; check the IPv4 one as well.
	if fold16(words(f[ipOff:udpOff])) != 0xffff {
		t.Fatalf("bad IPv4 header checksum % x", f[ipOff:udpOff])
	}
	return u
}

func TestRandomCIDFrames(t *testing.T) {
	p := newPair(t)
	fg := smallGenerator(t)
	g := newGen(t, p, RandomCIDs, fg)
	tmpl, _ := fg.Entry(0)
	seen := map[string]bool{}
	srcs := map[netip.Addr]bool{}
	for range 64 {
		u := checkFrame(t, runOnce(t, p, g))
		dcid := string(u.Payload[dcidOff : dcidOff+cidLen])
		if seen[dcid] {
			t.Fatalf("DCID %x repeated", dcid)
		}
		seen[dcid] = true
		srcs[u.SrcIP] = true
		// Everything but the two CIDs is the template Initial's.
		got := bytes.Clone(u.Payload)
		copy(got[dcidOff:], tmpl[dcidOff:dcidOff+cidLen])
		copy(got[scidOff:], tmpl[scidOff:scidOff+cidLen])
		if !bytes.Equal(got, tmpl) {
			t.Fatal("payload differs from the template beyond the connection IDs")
		}
		if bytes.Equal(u.Payload[scidOff:scidOff+cidLen], tmpl[scidOff:scidOff+cidLen]) {
			t.Fatal("SCID not randomized")
		}
	}
	if len(srcs) < 60 {
		t.Fatalf("%d distinct sources in 64 frames", len(srcs))
	}
}

func TestPoolFrames(t *testing.T) {
	p := newPair(t)
	fg := smallGenerator(t)
	g := newGen(t, p, Pool, fg)
	hit := map[int]bool{}
	for range 128 {
		u := checkFrame(t, runOnce(t, p, g))
		i := -1
		for j := range fg.PoolSize() {
			if e, _ := fg.Entry(j); bytes.Equal(e, u.Payload) {
				i = j
			}
		}
		if i < 0 {
			t.Fatal("payload is no pool entry")
		}
		hit[i] = true
		if _, err := flood.OpenInitial(u.Payload); err != nil {
			t.Fatalf("pool frame does not decrypt: %v", err)
		}
	}
	if len(hit) < fg.PoolSize()/2 {
		t.Fatalf("128 frames used %d of %d pool entries", len(hit), fg.PoolSize())
	}
}

// TestFramesOverwriteReceiverChanges: the page pool is not reset between
// runs, so a frame the receiver scribbled on must come out whole again.
func TestFramesOverwriteReceiverChanges(t *testing.T) {
	p := newPair(t)
	for _, mode := range []Mode{RandomCIDs, Pool} {
		g := newGen(t, p, mode, smallGenerator(t))
		dirty := bytes.Clone(g.tmpl.frame)
		for i := range hdrLen {
			dirty[i] ^= 0x5a
		}
		saved := g.tmpl.frame
		g.tmpl.frame = dirty
		checkFrame(t, runOnce(t, p, g))
		g.tmpl.frame = saved
		g.Close()
	}
}

// udpStats reads the Udp counters of the calling thread's namespace.
func udpStats(t *testing.T) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/net/snmp")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	m := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		for i, v := range f[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			m[names[i]] = n
		}
	}
	return m
}

// TestLiveDelivers: live frames reach a UDP socket in the peer namespace,
// every checksum accepted by the kernel, and the counts agree.
func TestLiveDelivers(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		cpus []int
	}{{RandomCIDs, nil}, {Pool, nil}, {Pool, []int{0, 1 % runtime.NumCPU()}}} {
		t.Run(fmt.Sprintf("%v-cpus%v", c.mode, c.cpus), func(t *testing.T) {
			p := newPair(t)
			g := newGenCPUs(t, p, c.mode, smallGenerator(t), c.cpus)
			var fd int
			var before map[string]uint64
			must(t, netnstest.In(p.rcv, func() error {
				fd = netnstest.UDPSocket(t, target, netip.AddrPort{}, 2*time.Second)
				before = udpStats(t)
				return nil
			}))
			const n = 2000
			var st Stats
			run := func() error {
				var err error
				st, err = g.Run(context.Background(), flood.RunConfig{Count: n, Duration: 10 * time.Second, Rate: 50_000})
				return err
			}
			if c.cpus == nil {
				must(t, netnstest.In(p.gen, run))
			} else {
				must(t, run()) // its threads enter the namespace themselves
			}
			if st.Sent != n || st.Errors != 0 || st.Stopped != "count" || st.FirstError != "" {
				t.Fatalf("stats %+v, want %d sent, no errors", st, n)
			}
			// The veth updates these counters without atomics, so two CPUs
			// sending to one queue can lose increments: exact only for one.
			if !st.HaveXmit || (c.cpus == nil && st.Delivered+st.Refused != n) || st.Delivered+st.Refused > n {
				t.Fatalf("veth counters: delivered %d + refused %d, want %d (have %v)", st.Delivered, st.Refused, n, st.HaveXmit)
			}
			want := int(st.Delivered)
			if c.cpus != nil {
				want = n - int(st.Refused)
			}
			buf := make([]byte, 2048)
			got := 0
			for got < want {
				k, err := netnstest.ReadUDP(fd, buf)
				if err != nil {
					break
				}
				if k != flood.UDPPayloadSize {
					t.Fatalf("datagram of %d bytes", k)
				}
				got++
			}
			var after map[string]uint64
			must(t, netnstest.In(p.rcv, func() error { after = udpStats(t); return nil }))
			if d := after["InCsumErrors"] - before["InCsumErrors"]; d != 0 {
				t.Fatalf("%d UDP checksum errors", d)
			}
			if got != want {
				t.Fatalf("received %d datagrams, want %d (delivered %d; UDP counters before %v after %v)", got, want, st.Delivered, before, after)
			}
			if st.CPU <= 0 || st.Calls == 0 {
				t.Fatalf("no CPU time or calls recorded: %+v", st)
			}
		})
	}
}

func TestRunRefusesOtherNamespace(t *testing.T) {
	p := newPair(t)
	g := newGen(t, p, RandomCIDs, smallGenerator(t))
	err := netnstest.In(p.rcv, func() error {
		_, err := g.Run(context.Background(), flood.RunConfig{Count: 1, Duration: time.Second})
		return err
	})
	if !errors.Is(err, ErrNamespace) {
		t.Fatalf("Run in another namespace: %v, want ErrNamespace", err)
	}
	if _, err := g.Run(context.Background(), flood.RunConfig{Count: 1, Duration: time.Second}); !errors.Is(err, ErrNamespace) {
		t.Fatalf("Run in the initial namespace: %v, want ErrNamespace", err)
	}
	if _, err := g.Run(context.Background(), flood.RunConfig{Count: 0, Duration: time.Second}); !errors.Is(err, flood.ErrUnbounded) {
		t.Fatalf("unbounded Run: %v", err)
	}
}

func TestNewRefusesInitialNamespace(t *testing.T) {
	netnstest.RequireRoot(t, "the live-frames generator")
	_, err := New(Config{Iface: "lo", Target: target})
	if !errors.Is(err, flood.ErrNeedNamespace) {
		t.Fatalf("New in the initial namespace: %v, want ErrNeedNamespace", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fold16 folds an unfolded ones' complement sum to 16 bits.
func fold16(s uint32) uint32 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return s
}

// TestReplySink: replies from the server port to the spoof prefix are
// counted (Retries apart) and dropped; other traffic passes.
func TestReplySink(t *testing.T) {
	p := newPair(t)
	netnstest.IP(t, "-n", p.rcv, "route", "add", spoofTest.String(), "via", ipGen.String())
	var sink *ReplySink
	must(t, netnstest.In(p.gen, func() (err error) {
		sink, err = AttachReplySink("gen0", spoofTest, target.Port())
		return err
	}))
	defer sink.Close()
	var rx, tx int
	must(t, netnstest.In(p.gen, func() error {
		rx = netnstest.UDPSocket(t, netip.AddrPortFrom(ipGen, 5555), netip.AddrPort{}, 2*time.Second)
		return nil
	}))
	must(t, netnstest.In(p.rcv, func() error {
		tx = netnstest.UDPSocket(t, target, netip.AddrPort{}, time.Second)
		return nil
	}))
	retryV1 := append([]byte{0xf0, 0, 0, 0, 1}, make([]byte, 40)...)
	retryV2 := append([]byte{0xc0, 0x6b, 0x33, 0x43, 0xcf}, make([]byte, 40)...)
	initial := append([]byte{0xc0, 0, 0, 0, 1}, make([]byte, 40)...)
	send := func(b []byte, to netip.AddrPort) {
		t.Helper()
		must(t, unix.Sendto(tx, b, 0, &unix.SockaddrInet4{Addr: to.Addr().As4(), Port: int(to.Port())}))
	}
	spoofed := netip.AddrPortFrom(netip.MustParseAddr("198.18.200.7"), 40000)
	send(retryV1, spoofed)
	send(retryV2, spoofed)
	send(initial, spoofed)
	send(initial, netip.AddrPortFrom(ipGen, 5555)) // not spoofed: passes
	buf := make([]byte, 128)
	if n, err := netnstest.ReadUDP(rx, buf); err != nil || n != len(initial) {
		t.Fatalf("the datagram to a real address did not pass the sink: %d, %v", n, err)
	}
	retries, other, err := sink.Counts()
	if err != nil || retries != 2 || other != 1 {
		t.Fatalf("sink counted %d Retries and %d other, %v; want 2 and 1", retries, other, err)
	}
}

func TestPacing(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want time.Duration
	}{{0, 0}, {9_999, 0}, {10_000, 100 * time.Microsecond}, {1e6, time.Microsecond}} {
		if got := pacedInterval(c.rate); got != c.want {
			t.Errorf("pacedInterval(%v) = %v, want %v", c.rate, got, c.want)
		}
	}
	if b := pacedBurst(5000, 0); b != 5 {
		t.Errorf("pacedBurst(5000) = %d, want a millisecond's worth, 5", b)
	}
	if b := pacedBurst(1e9, 0); b != maxPacedBurst {
		t.Errorf("pacedBurst(1e9) = %d, want %d", b, maxPacedBurst)
	}
	if b := pacedBurst(5000, 7); b != 7 {
		t.Errorf("pacedBurst with a batch = %d, want it", b)
	}
}
