//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket is an AF_XDP socket bound to one queue of one interface, with its
// own UMEM. It is not safe for concurrent use: one goroutine drives it (one
// socket per queue, one worker per socket).
type Socket struct {
	fd       int
	eventFD  int // wakes Wait when its context ends
	ifindex  int
	queue    int
	zeroCopy bool
	cfg      Config

	umem *umem
	fill addrRing
	comp addrRing
	rx   descRing
	tx   descRing

	// rxOwned counts frames handed to the kernel for receiving (in the fill
	// ring or not yet consumed from RX); refills keep it at rxTarget so
	// frames sent out on TX do not starve reception.
	rxOwned  int
	rxTarget int
	// txOut counts frames queued on TX and not yet completed.
	txOut int

	pollFDs [2]unix.PollFd
	closed  bool
}

// Open creates an AF_XDP socket on queue of the interface with index
// ifindex in the calling thread's network namespace, sets up its UMEM and
// rings and binds it. The socket receives nothing until an XDP program
// redirects packets into an XSKMAP slot holding it (see Register).
func Open(ifindex, queue int, cfg Config) (*Socket, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if ifindex <= 0 {
		return nil, fmt.Errorf("%w: index %d", ErrNoInterface, ifindex)
	}
	if queue < 0 {
		return nil, fmt.Errorf("%w: queue %d", ErrQueueRange, queue)
	}
	s, err := open(ifindex, queue, c)
	if c.Mode == ModeAuto && errors.Is(err, ErrNotSupported) && !errors.Is(err, unix.EAFNOSUPPORT) {
		// The kernel normally falls back to copy mode by itself; older
		// ones refuse instead, so retry with copy forced.
		c.Mode = ModeCopy
		s, err = open(ifindex, queue, c)
	}
	return s, err
}

// OpenByName is Open for an interface name.
func OpenByName(name string, queue int, cfg Config) (*Socket, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrNoInterface, name, err)
	}
	return Open(ifi.Index, queue, cfg)
}

func open(ifindex, queue int, c Config) (s *Socket, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("afxdp: socket(AF_XDP): %w", classify(err))
	}
	s = &Socket{fd: fd, eventFD: -1, ifindex: ifindex, queue: queue, cfg: c}
	defer func() {
		if err != nil {
			_ = s.Close()
			s = nil
		}
	}()
	if s.umem, err = newUMEM(c.NumFrames, c.FrameSize); err != nil {
		return s, err
	}
	if err = s.umem.register(fd, c.Headroom); err != nil {
		return s, err
	}
	sizes := []struct{ opt, n int }{
		{unix.XDP_UMEM_FILL_RING, c.FillRingSize},
		{unix.XDP_UMEM_COMPLETION_RING, c.CompletionRingSize},
		{unix.XDP_RX_RING, c.RXRingSize},
		{unix.XDP_TX_RING, c.TXRingSize},
	}
	for _, r := range sizes {
		if err = unix.SetsockoptInt(fd, unix.SOL_XDP, r.opt, r.n); err != nil {
			return s, fmt.Errorf("afxdp: set ring size %d (opt %d): %w", r.n, r.opt, classify(err))
		}
	}
	off, err := mmapOffsets(fd)
	if err != nil {
		return s, err
	}
	if s.fill, err = mapAddrRing(fd, off.Fr, c.FillRingSize, unix.XDP_UMEM_PGOFF_FILL_RING); err != nil {
		return s, err
	}
	if s.comp, err = mapAddrRing(fd, off.Cr, c.CompletionRingSize, unix.XDP_UMEM_PGOFF_COMPLETION_RING); err != nil {
		return s, err
	}
	if s.rx, err = mapDescRing(fd, off.Rx, c.RXRingSize, unix.XDP_PGOFF_RX_RING); err != nil {
		return s, err
	}
	if s.tx, err = mapDescRing(fd, off.Tx, c.TXRingSize, unix.XDP_PGOFF_TX_RING); err != nil {
		return s, err
	}
	if err = s.bind(); err != nil {
		return s, err
	}
	if s.eventFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return s, fmt.Errorf("afxdp: eventfd: %w", err)
	}
	s.pollFDs[0].Fd = int32(s.fd)
	s.pollFDs[1] = unix.PollFd{Fd: int32(s.eventFD), Events: unix.POLLIN}

	// Half the frames (at most a full fill ring) wait for packets; the rest
	// serve AllocFrame.
	s.rxTarget = min(c.NumFrames/2, c.FillRingSize)
	s.refill()
	return s, nil
}

// mmapOffsets asks the kernel where the indices and entries of each ring sit.
func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	n := uint32(unsafe.Sizeof(off))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return off, fmt.Errorf("afxdp: XDP_MMAP_OFFSETS: %w", classify(e))
	}
	if n != uint32(unsafe.Sizeof(off)) {
		// Kernels before 5.4 lack the flags word that need-wakeup uses.
		return off, fmt.Errorf("%w: XDP_MMAP_OFFSETS returned %d bytes (kernel too old)", ErrNotSupported, n)
	}
	return off, nil
}

func (s *Socket) bind() error {
	var flags uint16
	switch s.cfg.Mode {
	case ModeCopy:
		flags = unix.XDP_COPY
	case ModeZeroCopy:
		flags = unix.XDP_ZEROCOPY
	}
	if !s.cfg.NoNeedWakeup {
		flags |= unix.XDP_USE_NEED_WAKEUP
	}
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(s.ifindex), QueueID: uint32(s.queue)}
	err := unix.Bind(s.fd, sa)
	if err == nil {
		var opts uint32
		n := uint32(unsafe.Sizeof(opts))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_OPTIONS,
			uintptr(unsafe.Pointer(&opts)), uintptr(unsafe.Pointer(&n)), 0)
		if e != 0 {
			return fmt.Errorf("afxdp: XDP_OPTIONS: %w", e)
		}
		s.zeroCopy = opts&unix.XDP_OPTIONS_ZEROCOPY != 0
		return nil
	}
	where := fmt.Sprintf("ifindex %d queue %d mode %v", s.ifindex, s.queue, s.cfg.Mode)
	if err == unix.EINVAL {
		// EINVAL covers a bad queue id among other things; ask the
		// interface how many queues it has to tell which.
		rx, tx, qerr := queueCount(s.ifindex)
		switch {
		case errors.Is(qerr, ErrNoInterface):
			return fmt.Errorf("afxdp: bind %s: %w", where, qerr)
		case qerr == nil && s.queue >= max(rx, tx):
			return fmt.Errorf("%w: bind %s: interface has %d rx / %d tx queues (%w)", ErrQueueRange, where, rx, tx, err)
		}
	}
	return fmt.Errorf("afxdp: bind %s: %w", where, classify(err))
}

// FD returns the socket's file descriptor, the value to store in an XSKMAP.
func (s *Socket) FD() int { return s.fd }

// Ifindex returns the interface index the socket is bound to.
func (s *Socket) Ifindex() int { return s.ifindex }

// Queue returns the queue id the socket is bound to.
func (s *Socket) Queue() int { return s.queue }

// ZeroCopy reports whether the kernel bound the socket in zero-copy mode
// (false: copy mode).
func (s *Socket) ZeroCopy() bool { return s.zeroCopy }

// FrameSize returns the UMEM frame size.
func (s *Socket) FrameSize() int { return s.cfg.FrameSize }

// Close unmaps the rings and the UMEM and closes the descriptors. Frames
// and slices from Frame are invalid afterwards. Close is idempotent.
func (s *Socket) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	// Closing the socket first detaches it from the device and from any
	// XSKMAP, so the kernel stops writing into the UMEM before it is unmapped
	// (the kernel holds its own page references, so either order is safe).
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	if s.eventFD >= 0 {
		errs = append(errs, unix.Close(s.eventFD))
		s.eventFD = -1
	}
	errs = append(errs, s.fill.unmap(), s.comp.unmap(), s.rx.unmap(), s.tx.unmap())
	if s.umem != nil {
		errs = append(errs, s.umem.unmap())
	}
	return errors.Join(errs...)
}

// Stats are the kernel's per-socket counters (XDP_STATISTICS).
type Stats struct {
	RXDropped            uint64 // dropped for lack of space (other than below)
	RXInvalidDescs       uint64 // fill ring entries the kernel rejected
	TXInvalidDescs       uint64 // TX descriptors the kernel rejected
	RXRingFull           uint64 // dropped because the RX ring was full
	RXFillRingEmptyDescs uint64 // times the fill ring was empty
	TXRingEmptyDescs     uint64 // times the kernel found the TX ring empty
}

// Stats reads the kernel's counters for the socket.
func (s *Socket) Stats() (Stats, error) {
	if s.closed {
		return Stats{}, ErrClosed
	}
	var st unix.XDPStatistics
	n := uint32(unsafe.Sizeof(st))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return Stats{}, fmt.Errorf("afxdp: XDP_STATISTICS: %w", e)
	}
	return Stats{
		RXDropped:            st.Rx_dropped,
		RXInvalidDescs:       st.Rx_invalid_descs,
		TXInvalidDescs:       st.Tx_invalid_descs,
		RXRingFull:           st.Rx_ring_full,
		RXFillRingEmptyDescs: st.Rx_fill_ring_empty_descs,
		TXRingEmptyDescs:     st.Tx_ring_empty_descs,
	}, nil
}
