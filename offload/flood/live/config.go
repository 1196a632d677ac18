package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/frame"
)

// Frame layout the program is compiled for (bpf/live.bpf.c): the paper's
// 1242-byte frame, Ethernet + IPv4 without options + UDP + a 1200-byte
// Initial whose DCID and SCID are 8 bytes.
const (
	hdrLen    = frame.EthHeaderLen + frame.IPv4HeaderLen + frame.UDPHeaderLen
	FrameLen  = hdrLen + flood.UDPPayloadSize
	cidLen    = 8
	dcidOff   = 6               // in the UDP payload: first byte, version, DCID length
	scidOff   = dcidOff + 8 + 1 // DCID, SCID length
	ipOff     = frame.EthHeaderLen
	udpOff    = ipOff + frame.IPv4HeaderLen
	maxPool   = 65536 // TR_GEN_POOL_MAX
	maxBatch  = 256   // the kernel's limit for live frames
	firstPort = 1024  // lowest random source port
)

// DefaultBatch is the number of frames the kernel builds and flushes per
// batch (BPF_PROG_RUN's batch_size; the kernel's own default).
const DefaultBatch = 64

// Mode selects what changes per frame besides the spoofed source address
// and port.
type Mode int

const (
	// RandomCIDs gives every frame a random 8-byte DCID and SCID, the rest
	// of the Initial copied from a real one (the paper's flood). The DCID is
	// an input of the Initial keys, so the packets do not decrypt: a server
	// that answers every token-less Initial with a Retry never notices,
	// one that decrypts first drops them.
	RandomCIDs Mode = iota
	// Pool gives every frame one of the generator's pre-built complete
	// Initials at random: decryptable, each a new handshake to a server
	// that does not Retry, its DCID repeating every pool size or so.
	Pool
)

func (m Mode) String() string {
	switch m {
	case RandomCIDs:
		return "random-cids"
	case Pool:
		return "pool"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Config configures New.
type Config struct {
	// Iface is the interface the frames are redirected into, in the
	// calling thread's network namespace (which must not be the initial
	// one). It is an Ethernet device, typically one end of a veth pair
	// whose peer has an XDP program or GRO enabled (a veth drops
	// redirected frames otherwise).
	Iface string
	// Target is the IPv4 address and UDP port of the frames.
	Target netip.AddrPort
	// Spoof is the source prefix (zero: flood.SpoofRange); it must lie in
	// flood.SpoofRange.
	Spoof netip.Prefix
	// DstMAC is the next hop's address (nil: flood.BroadcastMAC). The
	// source MAC is Iface's.
	DstMAC net.HardwareAddr
	// Mode selects random connection IDs (default) or the pool.
	Mode Mode
	// Generator supplies the Initials: entry 0 is the template of
	// RandomCIDs mode, and Pool mode loads every entry. It must be in pool
	// mode with 8-byte DCIDs and SCIDs (nil: flood.NewGenerator with its
	// defaults, DefaultPoolSize entries).
	Generator *flood.Generator
	// Batch is the kernel's batch size, 1 to 256 (0: DefaultBatch).
	Batch int
	// CPUs, when set, makes Run send from one thread per CPU, each pinned
	// to its CPU (see Generator.Run).
	CPUs []int
}

// Errors for configurations the program cannot send.
var (
	ErrTemplate = errors.New("live: the generator's Initials do not fit the program's frame layout " +
		"(pool mode, 1200-byte payloads, 8-byte DCID and SCID)")
	ErrConfig = errors.New("live: invalid configuration")
)

// check validates the fields that need no kernel and fills defaults.
func (c Config) check() (Config, error) {
	if !c.Target.Addr().Is4() || c.Target.Port() == 0 {
		return c, fmt.Errorf("%w: target %v must be IPv4:port", ErrConfig, c.Target)
	}
	if !c.Spoof.IsValid() {
		c.Spoof = flood.SpoofRange
	}
	if err := flood.CheckSpoofPrefix(c.Spoof); err != nil {
		return c, err
	}
	c.Spoof = c.Spoof.Masked()
	if c.Mode != RandomCIDs && c.Mode != Pool {
		return c, fmt.Errorf("%w: mode %v", ErrConfig, c.Mode)
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Batch < 1 || c.Batch > maxBatch {
		return c, fmt.Errorf("%w: batch %d, want 1 to %d", ErrConfig, c.Batch, maxBatch)
	}
	for _, cpu := range c.CPUs {
		if cpu < 0 || cpu >= 1024 {
			return c, fmt.Errorf("%w: CPU %d", ErrConfig, cpu)
		}
	}
	if c.DstMAC != nil && len(c.DstMAC) != 6 {
		return c, fmt.Errorf("%w: MAC address %v is not 6 bytes", ErrConfig, c.DstMAC)
	}
	if c.Generator == nil {
		g, err := flood.NewGenerator(flood.GeneratorConfig{})
		if err != nil {
			return c, err
		}
		c.Generator = g
	}
	g := c.Generator
	if g.Reprotect() || g.PoolSize() == 0 || g.PoolSize() > maxPool {
		return c, ErrTemplate
	}
	for i := range g.PoolSize() {
		if p, _ := g.Entry(i); !fitsLayout(p) {
			return c, ErrTemplate
		}
	}
	return c, nil
}

// fitsLayout reports whether an Initial has the program's layout.
func fitsLayout(p []byte) bool {
	return len(p) == flood.UDPPayloadSize && p[0]&0x80 != 0 && p[5] == cidLen && p[scidOff-1] == cidLen
}

// template is what the loader writes into the program's configuration,
// with the frame BPF_PROG_RUN starts from.
type template struct {
	frame  []byte // FrameLen bytes: what the kernel copies into every page
	hdr    [hdrLen]byte
	ipSum  uint32
	udpSum uint32
	base   uint32
	mask   uint32
}

// newTemplate builds the template frame from the generator's first
// Initial and precomputes the sums the program completes per frame.
func newTemplate(c Config, srcMAC net.HardwareAddr) (*template, error) {
	payload, _ := c.Generator.Entry(0)
	f := frame.UDP{
		Dst:     frame.MAC(flood.BroadcastMAC),
		SrcIP:   c.Spoof.Addr(),
		DstIP:   c.Target.Addr(),
		DstPort: c.Target.Port(),
		Payload: payload,
	}
	if c.DstMAC != nil {
		f.Dst = frame.MAC(c.DstMAC)
	}
	if len(srcMAC) == 6 {
		f.Src = frame.MAC(srcMAC)
	}
	t := &template{frame: make([]byte, FrameLen)}
	if _, err := f.Encode(t.frame); err != nil {
		return nil, err
	}
	a := c.Spoof.Addr().As4()
	t.base = binary.BigEndian.Uint32(a[:])
	t.mask = uint32(1)<<(32-c.Spoof.Bits()) - 1

	// The headers with the fields the program writes zeroed.
	copy(t.hdr[:], t.frame[:hdrLen])
	clear(t.hdr[ipOff+10 : ipOff+16]) // IPv4 checksum and source
	clear(t.hdr[udpOff : udpOff+2])   // UDP source port
	clear(t.hdr[udpOff+6 : udpOff+8]) // UDP checksum
	ip := t.hdr[ipOff:udpOff]
	t.ipSum = words(ip)
	udpLen := uint32(frame.UDPHeaderLen + flood.UDPPayloadSize)
	t.udpSum = words(ip[16:20]) + 17 + udpLen + words(t.hdr[udpOff:hdrLen])
	if c.Mode == RandomCIDs {
		p := make([]byte, len(payload))
		copy(p, payload)
		clear(p[dcidOff : dcidOff+cidLen])
		clear(p[scidOff : scidOff+cidLen])
		t.udpSum += words(p)
	}
	return t, nil
}

// words is the unfolded ones' complement sum of b as big-endian 16-bit
// words (an odd last byte is the high byte of a word).
func words(b []byte) uint32 {
	var s uint32
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}
