package udpio

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// WriterConfig configures NewWriter.
type WriterConfig struct {
	// Batch is the most datagrams (or GSO buffers) per sendmmsg call (0: DefaultBatch).
	Batch int
	// GSO sends messages with a SegmentSize as one UDP_SEGMENT buffer; set it from
	// Capabilities.GSO. Without it such messages go out one datagram per segment.
	GSO bool
	// Logger receives a Debug record when GSO is turned off (nil: slog.Default()).
	Logger *slog.Logger
}

// Writer sends batches of datagrams on one socket with sendmmsg. It is not safe for
// concurrent use; see the package documentation.
type Writer struct {
	raw    syscall.RawConn
	v6     bool
	gso    bool
	logger *slog.Logger

	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []byte
	ctrl  []byte
	// For each slot of the current call: where in msgs it starts, and whether it
	// carries a UDP_SEGMENT control message.
	slotMsg []int
	slotOff []int
	slotGSO []bool

	// writeFn is w.doWrite bound once (no closure allocation per call); count, n and
	// errno carry its input and results.
	writeFn func(fd uintptr) bool
	count   int
	n       int
	errno   unix.Errno

	// sendmmsg is the system call; tests replace it to inject kernel errors.
	sendmmsg func(fd uintptr, hdrs []unix.Mmsghdr) (int, unix.Errno)
}

// NewWriter prepares a Writer for the socket c.
func NewWriter(c *net.UDPConn, cfg WriterConfig) (*Writer, error) {
	raw, batch, err := rawConn(c, cfg.Batch)
	if err != nil {
		return nil, err
	}
	var domain int
	var derr error
	if err := raw.Control(func(fd uintptr) {
		domain, derr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	}); err != nil {
		return nil, fmt.Errorf("udpio: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("udpio: reading socket family: %w", derr)
	}
	w := &Writer{
		raw:      raw,
		v6:       domain == unix.AF_INET6,
		gso:      cfg.GSO,
		logger:   Config{Logger: cfg.Logger}.logger(),
		hdrs:     make([]unix.Mmsghdr, batch),
		iovs:     make([]unix.Iovec, batch),
		names:    make([]byte, batch*sockaddrSize),
		ctrl:     make([]byte, batch*txControlSize),
		slotMsg:  make([]int, batch),
		slotOff:  make([]int, batch),
		slotGSO:  make([]bool, batch),
		sendmmsg: sendmmsg,
	}
	for i := range w.hdrs {
		h := &w.hdrs[i].Hdr
		h.Name = &w.names[i*sockaddrSize]
		h.Iov = &w.iovs[i]
		h.SetIovlen(1)
		h.Control = &w.ctrl[i*txControlSize]
	}
	w.writeFn = w.doWrite
	return w, nil
}

// GSOEnabled reports whether the Writer still uses UDP GSO. It turns false for good when
// the kernel answers a GSO send with EIO (no checksum offload on the route's device).
func (w *Writer) GSOEnabled() bool { return w.gso }

// WriteBatch sends msgs in order, waiting for socket buffer space as needed, and returns
// how many messages were sent completely. A Message with SegmentSize goes out as one GSO
// buffer, or one datagram per segment when GSO is off. On an error, n < len(msgs) and
// msgs[n] is the message that failed (bad fields, or refused by the kernel, e.g.
// unreachable); when it was being sent segment by segment, its first segments may have
// gone out. The caller can drop it and continue with msgs[n+1:].
func (w *Writer) WriteBatch(msgs []Message) (int, error) {
	msg, off := 0, 0 // resume point: message index and byte offset into it
	for msg < len(msgs) {
		k, nextMsg, nextOff, perr := w.pack(msgs, msg, off)
		if k == 0 {
			return msg, perr
		}
		w.count = k
		err := w.raw.Write(w.writeFn)
		for i := range k {
			w.iovs[i].Base = nil
		}
		runtime.KeepAlive(msgs)
		if err != nil {
			return msg, err
		}
		if w.errno != 0 {
			// Only the first slot can fail: sendmmsg reports an error only when it
			// sent nothing, and the slots before it were sent by an earlier round.
			if gsoUnsupported(w.errno, w.slotGSO[0]) && w.gso {
				w.gso = false
				w.logger.Debug("udpio: kernel refused UDP GSO (EIO), sending segments one by one")
				continue
			}
			return msg, os.NewSyscallError("sendmmsg", w.errno)
		}
		for i := range w.n {
			m := &msgs[w.slotMsg[i]]
			l := int(w.hdrs[i].Len)
			if w.slotOff[i] == 0 {
				m.N = l
			} else {
				m.N += l
			}
		}
		if w.n < k {
			msg, off = w.slotMsg[w.n], w.slotOff[w.n]
			continue
		}
		if perr != nil {
			return nextMsg, perr
		}
		msg, off = nextMsg, nextOff
	}
	return len(msgs), nil
}

// gsoUnsupported decides whether a failed send should turn GSO off: EIO on a send that
// carried UDP_SEGMENT is how the kernel says the device cannot segment (no checksum
// offload, or an IPsec route); anything else is an ordinary send error.
func gsoUnsupported(errno unix.Errno, sentWithGSO bool) bool {
	return sentWithGSO && errno == unix.EIO
}

// pack fills slots starting at message msg, byte offset off, and returns the number of
// slots and the resume point after them. A message with bad fields stops packing and is
// reported in err with the slots before it still to be sent.
func (w *Writer) pack(msgs []Message, msg, off int) (k, nextMsg, nextOff int, err error) {
	for msg < len(msgs) && k < len(w.hdrs) {
		m := &msgs[msg]
		if off == 0 {
			if err := validateSegments(m); err != nil {
				return k, msg, 0, fmt.Errorf("udpio: message %d: %w", msg, err)
			}
		}
		name := w.names[k*sockaddrSize : (k+1)*sockaddrSize]
		nameLen, err := encodeSockaddr(name, m.Addr, w.v6)
		if err != nil {
			return k, msg, 0, fmt.Errorf("udpio: message %d: %w", msg, err)
		}
		seg := m.SegmentSize
		split := seg > 0 && len(m.Buf) > seg
		start, end, gsoSeg := off, len(m.Buf), 0
		if split && w.gso {
			gsoSeg = seg
		} else if split {
			end = min(off+seg, len(m.Buf))
		}
		ctrl := w.ctrl[k*txControlSize : (k+1)*txControlSize]
		ctrlLen, err := buildTxControl(ctrl, gsoSeg, m.ECN, m.Addr, m.Local, m.IfIndex, w.v6)
		if err != nil {
			return k, msg, 0, fmt.Errorf("udpio: message %d: source address: %w", msg, err)
		}
		iov := &w.iovs[k]
		iov.Base = nil
		if end > start {
			iov.Base = &m.Buf[start]
		}
		iov.SetLen(end - start)
		h := &w.hdrs[k]
		h.Hdr.Namelen = uint32(nameLen)
		h.Hdr.SetControllen(ctrlLen)
		h.Hdr.Flags = 0
		h.Len = 0
		w.slotMsg[k], w.slotOff[k], w.slotGSO[k] = msg, start, gsoSeg > 0
		k++
		if end == len(m.Buf) {
			msg, off = msg+1, 0
		} else {
			off = end
		}
	}
	return k, msg, off, nil
}

// doWrite runs inside RawConn.Write: returning false asks the netpoller to wait until
// the socket is writable and call again.
func (w *Writer) doWrite(fd uintptr) bool {
	for {
		n, e := w.sendmmsg(fd, w.hdrs[:w.count])
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		w.n, w.errno = n, e
		return true
	}
}
