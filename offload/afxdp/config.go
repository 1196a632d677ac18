package afxdp

import (
	"fmt"
	"math"
)

// Mode selects how a socket binds to its queue.
type Mode int

// Bind modes.
const (
	// ModeAuto asks for zero-copy and lets the kernel fall back to copy mode
	// when the driver cannot; Socket.ZeroCopy reports which one it chose.
	ModeAuto Mode = iota
	// ModeCopy forces copy mode (works on every interface, veth included).
	ModeCopy
	// ModeZeroCopy forces zero-copy; Open fails with ErrNotSupported when
	// the driver lacks it.
	ModeZeroCopy
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeCopy:
		return "copy"
	case ModeZeroCopy:
		return "zerocopy"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Defaults used for zero Config fields.
const (
	DefaultFrameSize = 4096
	DefaultNumFrames = 4096
	DefaultRingSize  = 2048
)

// Config sizes a socket's UMEM and rings. Zero fields take the defaults.
type Config struct {
	// FrameSize is the size of one UMEM frame: 2048 or 4096 bytes.
	FrameSize int
	// NumFrames is the number of frames in the UMEM (a power of two is not
	// required). Half go to the fill ring at start, the rest serve TX.
	NumFrames int
	// FillRingSize, CompletionRingSize, RXRingSize and TXRingSize are ring
	// lengths in descriptors, powers of two.
	FillRingSize       int
	CompletionRingSize int
	RXRingSize         int
	TXRingSize         int
	// Headroom is reserved in front of every received packet (the kernel
	// adds its own XDP_PACKET_HEADROOM in copy mode).
	Headroom int
	// Mode selects zero-copy or copy binding.
	Mode Mode
	// NoNeedWakeup disables XDP_USE_NEED_WAKEUP: every Transmit then kicks
	// the kernel with a syscall.
	NoNeedWakeup bool
}

// withDefaults returns c with zero fields filled in and checks it.
func (c Config) withDefaults() (Config, error) {
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrameSize
	}
	if c.NumFrames == 0 {
		c.NumFrames = DefaultNumFrames
	}
	for _, p := range []*int{&c.FillRingSize, &c.CompletionRingSize, &c.RXRingSize, &c.TXRingSize} {
		if *p == 0 {
			*p = DefaultRingSize
		}
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return c, fmt.Errorf("%w: frame size %d, want 2048 or 4096", ErrConfig, c.FrameSize)
	}
	if c.NumFrames < 2 || c.NumFrames > 1<<20 {
		return c, fmt.Errorf("%w: %d frames, want 2..%d", ErrConfig, c.NumFrames, 1<<20)
	}
	if uint64(c.NumFrames)*uint64(c.FrameSize) > math.MaxInt {
		return c, fmt.Errorf("%w: %d frames of %d bytes exceed the address space", ErrConfig, c.NumFrames, c.FrameSize)
	}
	rings := []struct {
		name string
		n    int
	}{
		{"fill", c.FillRingSize}, {"completion", c.CompletionRingSize},
		{"rx", c.RXRingSize}, {"tx", c.TXRingSize},
	}
	for _, r := range rings {
		if r.n <= 0 || r.n > 1<<16 || r.n&(r.n-1) != 0 {
			return c, fmt.Errorf("%w: %s ring size %d, want a power of two up to 65536", ErrConfig, r.name, r.n)
		}
	}
	// The kernel needs XDP_PACKET_HEADROOM (256) plus the headroom plus at
	// least a minimal Ethernet frame inside each frame.
	if c.Headroom < 0 || c.Headroom > c.FrameSize-256-128 {
		return c, fmt.Errorf("%w: headroom %d too large for %d-byte frames", ErrConfig, c.Headroom, c.FrameSize)
	}
	if c.Mode < ModeAuto || c.Mode > ModeZeroCopy {
		return c, fmt.Errorf("%w: unknown mode %d", ErrConfig, int(c.Mode))
	}
	return c, nil
}
