package udpio

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reader receives batches of datagrams from one socket with recvmmsg. It is not safe for
// concurrent use; see the package documentation.
type Reader struct {
	raw   syscall.RawConn
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []byte
	ctrl  []byte

	// readFn is r.doRead, bound once so that each RawConn.Read call does not allocate
	// a closure; count, n and errno carry its input and results.
	readFn func(fd uintptr) bool
	count  int
	n      int
	errno  unix.Errno
}

// NewReader prepares a Reader for up to batch datagrams per call (0: DefaultBatch).
func NewReader(c *net.UDPConn, batch int) (*Reader, error) {
	raw, batch, err := rawConn(c, batch)
	if err != nil {
		return nil, err
	}
	r := &Reader{
		raw:   raw,
		hdrs:  make([]unix.Mmsghdr, batch),
		iovs:  make([]unix.Iovec, batch),
		names: make([]byte, batch*sockaddrSize),
		ctrl:  make([]byte, batch*rxControlSize),
	}
	for i := range r.hdrs {
		h := &r.hdrs[i].Hdr
		h.Name = &r.names[i*sockaddrSize]
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		h.Control = &r.ctrl[i*rxControlSize]
	}
	r.readFn = r.doRead
	return r, nil
}

// ReadBatch waits until at least one datagram is available and receives up to
// min(len(msgs), batch) of them without waiting further. It returns how many messages
// were filled; see Message for the fields. With GRO on, one message can hold several
// datagrams (Message.Datagrams splits them). Errors are those of the socket: deadlines
// (os.ErrDeadlineExceeded), net.ErrClosed after Close, or a wrapped errno.
func (r *Reader) ReadBatch(msgs []Message) (int, error) {
	count := min(len(msgs), len(r.hdrs))
	if count == 0 {
		return 0, nil
	}
	for i := range count {
		buf := msgs[i].Buf
		iov := &r.iovs[i]
		iov.Base = nil
		if len(buf) > 0 {
			iov.Base = &buf[0]
		}
		iov.SetLen(len(buf))
		h := &r.hdrs[i]
		h.Hdr.Namelen = sockaddrSize
		h.Hdr.SetControllen(rxControlSize)
		h.Hdr.Flags = 0
		h.Len = 0
	}
	r.count = count
	err := r.raw.Read(r.readFn)
	for i := range count {
		r.iovs[i].Base = nil
	}
	runtime.KeepAlive(msgs)
	if err != nil {
		return 0, err
	}
	if r.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", r.errno)
	}
	for i := range r.n {
		r.fill(&msgs[i], i)
	}
	return r.n, nil
}

func (r *Reader) fill(m *Message, i int) {
	h := &r.hdrs[i]
	m.N = int(h.Len)
	m.Truncated = h.Hdr.Flags&unix.MSG_TRUNC != 0
	name := r.names[i*sockaddrSize : (i+1)*sockaddrSize]
	m.Addr, _ = decodeSockaddr(name[:min(int(h.Hdr.Namelen), len(name))])
	ctrl := r.ctrl[i*rxControlSize : (i+1)*rxControlSize]
	info := parseControl(ctrl[:min(int(h.Hdr.Controllen), len(ctrl))])
	m.Local, m.IfIndex, m.SegmentSize, m.ECN = info.local, info.ifIndex, info.segSize, info.ecn
}

// doRead runs inside RawConn.Read: returning false asks the netpoller to wait for the
// socket to become readable and call again.
func (r *Reader) doRead(fd uintptr) bool {
	for {
		n, e := recvmmsg(fd, r.hdrs[:r.count])
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		r.n, r.errno = n, e
		return true
	}
}

// rawConn checks the arguments shared by NewReader and NewWriter.
func rawConn(c *net.UDPConn, batch int) (syscall.RawConn, int, error) {
	if c == nil {
		return nil, 0, errors.New("udpio: nil connection")
	}
	if batch == 0 {
		batch = DefaultBatch
	}
	if batch < 0 || batch > MaxBatch {
		return nil, 0, fmt.Errorf("udpio: batch size %d out of range 1..%d", batch, MaxBatch)
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, 0, fmt.Errorf("udpio: %w", err)
	}
	return raw, batch, nil
}
