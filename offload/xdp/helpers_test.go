//go:build linux

package xdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/fastpath"
)

// XDP actions (enum xdp_action).
const (
	xdpDrop     = 1
	xdpPass     = 2
	xdpRedirect = 4
)

const testPort = 4433

// testKey is an arbitrary fixed cache key.
var testKey = fastpath.Key{0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0}

// loadForTest loads the program with cfg, or skips the test when this
// process may not use BPF; it fails on any other error.
func loadForTest(tb testing.TB, cfg Config) *Program {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipping: loading an XDP program needs root (CAP_BPF, CAP_NET_ADMIN); CI runs these tests as root")
	}
	p, err := Load(cfg)
	// EPERM/EACCES: missing CAP_BPF, CAP_PERFMON or CAP_NET_ADMIN (or an
	// LSM says no); ENOSYS or ErrNotSupported: no BPF or too old a kernel.
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSYS) ||
		errors.Is(err, ebpf.ErrNotSupported) {
		tb.Skipf("skipping: the kernel refuses this BPF program here: %v", err)
	}
	if err != nil {
		tb.Fatalf("Load: %+v", err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return p
}

// loadFiltering loads the default test program and beats, so it filters.
func loadFiltering(tb testing.TB) *Program {
	tb.Helper()
	p := loadForTest(tb, Config{Port: testPort, Key: testKey, StaleAfter: 3600e9})
	if err := p.Beat(MonotonicNow()); err != nil {
		tb.Fatal(err)
	}
	return p
}

// run runs the program once on frame with BPF_PROG_TEST_RUN and returns
// its action; it fails the test when the frame came out modified.
func run(tb testing.TB, p *Program, frame []byte) uint32 {
	tb.Helper()
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256)}
	act, err := p.objs.TrFastpath.Run(opts)
	if err != nil {
		tb.Fatalf("test run: %v", err)
	}
	if !bytes.Equal(opts.DataOut, frame) {
		tb.Fatalf("frame modified by the program:\n in %x\nout %x", frame, opts.DataOut)
	}
	return act
}

// counters reads the program's counters or fails the test.
func counters(tb testing.TB, p *Program) Counters {
	tb.Helper()
	c, err := p.Counters()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// expect runs frame and checks the action and that exactly the counter of
// reason moved, by one.
func expect(tb testing.TB, p *Program, frame []byte, action uint32, reason Reason) {
	tb.Helper()
	before := counters(tb, p)
	if got := run(tb, p, frame); got != action {
		tb.Errorf("action %d, want %d (reason %s)", got, action, reason)
	}
	after := counters(tb, p)
	for r := range NumReasons {
		want := before[r]
		if Reason(r) == reason {
			want++
		}
		if after[r] != want {
			tb.Errorf("counter %s went %d -> %d, want %d", Reason(r), before[r], after[r], want)
		}
	}
}

// --- Frames. ---

var (
	dstMAC = []byte{0x02, 0, 0, 0, 0, 0x01}
	srcMAC = []byte{0x02, 0, 0, 0, 0, 0x02}
)

func ethFrame(etherType uint16, payload []byte) []byte {
	f := append(append([]byte{}, dstMAC...), srcMAC...)
	f = binary.BigEndian.AppendUint16(f, etherType)
	return append(f, payload...)
}

// ipv4Packet builds an IPv4 header with optWords 32-bit words of NOP
// options (so IHL = 5 + optWords) in front of payload.
func ipv4Packet(proto byte, optWords int, payload []byte) []byte {
	ihl := 5 + optWords
	h := make([]byte, 4*ihl)
	h[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)+len(payload)))
	h[6] = 0x40 // DF
	h[8] = 64
	h[9] = proto
	copy(h[12:], []byte{198, 18, 0, 1})
	copy(h[16:], []byte{192, 0, 2, 1})
	for i := 20; i < len(h); i++ {
		h[i] = 1 // NOP
	}
	return append(h, payload...)
}

func ipv6Packet(nextHeader byte, payload []byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6] = nextHeader
	h[7] = 64
	copy(h[8:], []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
	copy(h[24:], []byte{0x20, 0x01, 0x0d, 0xb8, 15: 2})
	return append(h, payload...)
}

func udpDatagram(dport uint16, payload []byte) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint16(h[0:], 50000)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(payload)))
	return append(h, payload...)
}

func udp4(dport uint16, payload []byte) []byte {
	return ethFrame(0x0800, ipv4Packet(17, 0, udpDatagram(dport, payload)))
}

func udp6(dport uint16, payload []byte) []byte {
	return ethFrame(0x86dd, ipv6Packet(17, udpDatagram(dport, payload)))
}

// --- QUIC packets (only the parts the program reads are meaningful). ---

// shortPacket is a 1-RTT packet: header, DCID, then 24 bytes standing in
// for packet number and protected payload.
func shortPacket(dcid []byte) []byte {
	b := append([]byte{0x41}, dcid...)
	return append(b, bytes.Repeat([]byte{0xa5}, 24)...)
}

// Long-header packet types of QUIC v1 (RFC 9000, section 17.2).
const (
	typeInitial   = 0
	type0RTT      = 1
	typeHandshake = 2
	typeRetry     = 3
)

// longPacket is a long-header packet of the given type and version padded
// to size bytes (at least the header plus 24 bytes).
func longPacket(typ byte, version uint32, dcid []byte, size int) []byte {
	b := []byte{0xc0 | typ<<4}
	b = binary.BigEndian.AppendUint32(b, version)
	b = append(b, byte(len(dcid)))
	b = append(b, dcid...)
	b = append(b, 8, 1, 2, 3, 4, 5, 6, 7, 8) // SCID
	b = append(b, bytes.Repeat([]byte{0x5a}, 24)...)
	for len(b) < size {
		b = append(b, 0)
	}
	return b
}

func randomCID(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// tableBitsSet reports whether all K bits of cid are set in table i.
func tableBitsSet(tb testing.TB, c *fastpath.Cache, i int, cid []byte) bool {
	tb.Helper()
	w, err := c.Words(i)
	if err != nil {
		tb.Fatal(err)
	}
	for _, b := range fastpath.Indices(c.Hash(cid)) {
		if atomic.LoadUint64(&w[b/64])&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}
