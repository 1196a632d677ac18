//go:build linux

package afxdp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// umem is the frame area shared with the kernel and the stack of frames
// that neither the kernel nor the caller holds.
type umem struct {
	mem       []byte
	frameSize uint64
	frameMask uint64 // frameSize-1: masks an address to its frame offset
	free      []uint64
}

func newUMEM(numFrames, frameSize int) (*umem, error) {
	mem, err := unix.Mmap(-1, 0, numFrames*frameSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("afxdp: mmap UMEM of %d frames: %w", numFrames, err)
	}
	u := &umem{
		mem:       mem,
		frameSize: uint64(frameSize),
		frameMask: uint64(frameSize - 1),
		free:      make([]uint64, 0, numFrames),
	}
	// Pushed in reverse so the lowest addresses are handed out first.
	for i := numFrames - 1; i >= 0; i-- {
		u.free = append(u.free, uint64(i)*u.frameSize)
	}
	return u, nil
}

// register tells the kernel about the UMEM (XDP_UMEM_REG).
func (u *umem) register(fd, headroom int) error {
	reg := unix.XDPUmemReg{
		Addr:     uint64(uintptr(unsafe.Pointer(&u.mem[0]))),
		Len:      uint64(len(u.mem)),
		Size:     uint32(u.frameSize),
		Headroom: uint32(headroom),
	}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if e != 0 {
		return fmt.Errorf("afxdp: register UMEM: %w", classify(e))
	}
	return nil
}

// base returns the start of the frame holding addr (aligned chunk mode).
func (u *umem) base(addr uint64) uint64 { return addr &^ u.frameMask }

// valid reports whether [addr, addr+n) lies inside one frame of the UMEM.
func (u *umem) valid(addr uint64, n uint32) bool {
	return addr < uint64(len(u.mem)) && (addr&u.frameMask)+uint64(n) <= u.frameSize
}

func (u *umem) push(addr uint64) {
	// The stack was sized for every frame, so this never grows; a frame
	// given back twice would be a caller bug, dropped rather than grown.
	if len(u.free) < cap(u.free) {
		u.free = append(u.free, u.base(addr))
	}
}

func (u *umem) pop() (uint64, bool) {
	n := len(u.free)
	if n == 0 {
		return 0, false
	}
	a := u.free[n-1]
	u.free = u.free[:n-1]
	return a, true
}

func (u *umem) unmap() error {
	if u.mem == nil {
		return nil
	}
	err := unix.Munmap(u.mem)
	u.mem = nil
	return err
}
