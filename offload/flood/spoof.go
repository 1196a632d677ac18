package flood

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"

	"github.com/turboretry/turboretry/offload/frame"
)

// FrameLen is the length of a spoofed Initial frame: Ethernet II, IPv4
// without options, UDP and the 1200-byte Initial, the paper's 1242 bytes.
// The frame codec is afxdp's, shared with the offload datapath.
const FrameLen = frame.EthHeaderLen + frame.IPv4HeaderLen + frame.UDPHeaderLen + UDPPayloadSize

// ErrFrameAddress is returned by NewFrameSource for a target that is not
// an IPv4 address and port.
var ErrFrameAddress = errors.New("flood: frame addresses must be IPv4")

// SpoofRange is the only range spoofed sources may come from: the
// benchmarking block of RFC 2544 / RFC 5735, as docs/design.md requires.
var SpoofRange = netip.MustParsePrefix("198.18.0.0/15")

// BroadcastMAC is the default destination MAC of spoofed frames; the
// receiving Linux stack accepts unicast IP in link-layer broadcast frames
// unless drop_unicast_in_l2_multicast is set.
var BroadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ErrSpoofRange is returned for a spoof prefix outside SpoofRange.
var ErrSpoofRange = errors.New("flood: spoofed sources must come from 198.18.0.0/15 (docs/design.md test network rules)")

// CheckSpoofPrefix accepts p only if it is a valid IPv4 prefix inside
// SpoofRange.
func CheckSpoofPrefix(p netip.Prefix) error {
	if !p.IsValid() || !p.Addr().Is4() || p.Bits() < SpoofRange.Bits() || !SpoofRange.Contains(p.Addr()) {
		return fmt.Errorf("%w: got %v", ErrSpoofRange, p)
	}
	return nil
}

// FrameConfig configures NewFrameSource.
type FrameConfig struct {
	// Target is the IPv4 address and UDP port the frames are sent to.
	Target netip.AddrPort
	// Spoof is the source prefix (zero: SpoofRange); it must lie in SpoofRange.
	Spoof netip.Prefix
	// SrcMAC is the sending interface's address; DstMAC the next hop's
	// (zero: BroadcastMAC).
	SrcMAC, DstMAC net.HardwareAddr
	// Seed fixes the random addresses and ports (nil: from crypto/rand).
	Seed *[32]byte
}

// FrameSource wraps each Initial from a Generator in an Ethernet, IPv4 and
// UDP frame with a random source address from the spoof prefix and a
// random source port (1024-65535). It is not safe for concurrent use.
type FrameSource struct {
	gen  *Generator
	hdr  frame.UDP // fixed fields; source, ID and payload per frame
	base uint32    // first address of the prefix
	mask uint32    // host bits
	rng  *rand.ChaCha8
	tmp  []byte
}

// NewFrameSource checks cfg and returns a FrameSource over gen.
func NewFrameSource(gen *Generator, cfg FrameConfig) (*FrameSource, error) {
	if !cfg.Target.Addr().Is4() || cfg.Target.Port() == 0 {
		return nil, fmt.Errorf("%w: target %v must be IPv4:port", ErrFrameAddress, cfg.Target)
	}
	p := cfg.Spoof
	if !p.IsValid() {
		p = SpoofRange
	}
	if err := CheckSpoofPrefix(p); err != nil {
		return nil, err
	}
	p = p.Masked()
	f := &FrameSource{gen: gen, tmp: make([]byte, 0, UDPPayloadSize)}
	a4 := p.Addr().As4()
	f.base = binary.BigEndian.Uint32(a4[:])
	f.mask = uint32(1)<<(32-p.Bits()) - 1
	f.hdr.DstIP, f.hdr.DstPort = cfg.Target.Addr(), cfg.Target.Port()
	f.hdr.Dst = BroadcastMAC
	for _, m := range []struct {
		dst *frame.MAC
		src net.HardwareAddr
	}{{&f.hdr.Src, cfg.SrcMAC}, {&f.hdr.Dst, cfg.DstMAC}} {
		switch len(m.src) {
		case 0:
		case 6:
			copy(m.dst[:], m.src)
		default:
			return nil, fmt.Errorf("flood: MAC address %v is not 6 bytes", m.src)
		}
	}
	var seed [32]byte
	if cfg.Seed != nil {
		seed = *cfg.Seed
	} else if _, err := crand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("flood: seeding: %w", err)
	}
	f.rng = rand.NewChaCha8(seed)
	return f, nil
}

// Next builds the next frame into buf[:0] (give it FrameLen bytes of
// capacity to avoid an allocation) and returns it.
func (f *FrameSource) Next(buf []byte) ([]byte, error) {
	payload, sum, haveSum, err := f.gen.nextWithSum(f.tmp)
	if err != nil {
		return nil, err
	}
	if !haveSum {
		sum = frame.PayloadSum(payload)
	}
	r := f.rng.Uint64()
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], f.base|uint32(r)&f.mask)
	f.hdr.SrcIP = netip.AddrFrom4(a)
	f.hdr.SrcPort = uint16(1024 + (r>>32)%(65536-1024))
	f.hdr.ID = uint16(r >> 48)
	f.hdr.Payload = payload
	n := f.hdr.Len()
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	n, err = f.hdr.EncodeWithSum(buf[:n], sum)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
