//go:build linux

package afxdp

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is the part of an AF_XDP ring shared by all four kinds: the
// producer and consumer indices and flags word live in memory mapped from the
// socket, so they are only touched with atomic loads and stores (the kernel
// publishes descriptors before storing the producer index, and reads them
// before storing the consumer index).
type ring struct {
	producer *uint32
	consumer *uint32
	flags    *uint32
	mask     uint32
	size     uint32
	// local is this side's index: producer for fill/TX, consumer for
	// RX/completion. cached is the last seen index of the other side.
	local  uint32
	cached uint32
	mem    []byte
}

// mapRing mmaps one ring of n entries of entSize bytes at page offset pgoff.
func mapRing(fd int, off unix.XDPRingOffset, n, entSize int, pgoff int64) (ring, unsafe.Pointer, error) {
	size := int(off.Desc) + n*entSize
	mem, err := unix.Mmap(fd, pgoff, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, nil, fmt.Errorf("afxdp: mmap ring: %w", err)
	}
	base := unsafe.Pointer(&mem[0])
	r := ring{
		producer: (*uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*uint32)(unsafe.Add(base, off.Flags)),
		mask:     uint32(n - 1),
		size:     uint32(n),
		mem:      mem,
	}
	return r, unsafe.Add(base, off.Desc), nil
}

func (r *ring) unmap() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem = nil
	r.producer, r.consumer, r.flags = nil, nil, nil
	return err
}

// needWakeup reports whether the kernel asked to be kicked for this ring.
func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// freeSlots returns how many entries a producer may write, up to want,
// refreshing the consumer index only when the cached one is not enough.
func (r *ring) freeSlots(want uint32) uint32 {
	free := r.size - (r.local - r.cached)
	if free >= want {
		return free
	}
	r.cached = atomic.LoadUint32(r.consumer)
	return r.size - (r.local - r.cached)
}

// submit publishes n written entries to the kernel.
func (r *ring) submit(n uint32) {
	r.local += n
	atomic.StoreUint32(r.producer, r.local)
}

// available returns how many entries a consumer may read, refreshing the
// producer index when the cached count falls short of want.
func (r *ring) available(want uint32) uint32 {
	n := r.cached - r.local
	if n >= want {
		return n
	}
	r.cached = atomic.LoadUint32(r.producer)
	return r.cached - r.local
}

// release hands n read entries back to the kernel.
func (r *ring) release(n uint32) {
	r.local += n
	atomic.StoreUint32(r.consumer, r.local)
}

// addrRing is a fill or completion ring (entries are UMEM addresses).
type addrRing struct {
	ring
	addrs []uint64
}

// descRing is an RX or TX ring (entries are descriptors).
type descRing struct {
	ring
	descs []Desc
}

func mapAddrRing(fd int, off unix.XDPRingOffset, n int, pgoff int64) (addrRing, error) {
	r, p, err := mapRing(fd, off, n, 8, pgoff)
	if err != nil {
		return addrRing{}, err
	}
	return addrRing{ring: r, addrs: unsafe.Slice((*uint64)(p), n)}, nil
}

func mapDescRing(fd int, off unix.XDPRingOffset, n int, pgoff int64) (descRing, error) {
	r, p, err := mapRing(fd, off, n, int(unsafe.Sizeof(Desc{})), pgoff)
	if err != nil {
		return descRing{}, err
	}
	return descRing{ring: r, descs: unsafe.Slice((*Desc)(p), n)}, nil
}

func (r *addrRing) unmap() error {
	r.addrs = nil
	return r.ring.unmap()
}

func (r *descRing) unmap() error {
	r.descs = nil
	return r.ring.unmap()
}

// Desc must match struct xdp_desc exactly, since ring entries are copied as Desc.
var (
	_ [unsafe.Sizeof(Desc{}) - unsafe.Sizeof(unix.XDPDesc{})]struct{}
	_ [unsafe.Sizeof(unix.XDPDesc{}) - unsafe.Sizeof(Desc{})]struct{}
)
