package flood

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/frame"
)

// etherTypeIPv4 is the only EtherType the sender writes (and binds).
const etherTypeIPv4 = 0x0800

// ErrUnsafeFrame is returned by PacketSender.Send for a frame that is not
// IPv4 from SpoofRange; such a frame is never handed to the kernel.
var ErrUnsafeFrame = errors.New("flood: frame is not IPv4 with a source in 198.18.0.0/15")

// PacketSender writes whole Ethernet frames to one interface through an
// AF_PACKET SOCK_RAW socket with sendmmsg. The kernel sends the bytes as
// they are, which is what spoofing needs; it works on veth. The socket is
// opened with protocol 0, so it receives nothing. Not safe for concurrent
// use.
type PacketSender struct {
	f     *os.File
	raw   syscall.RawConn
	iface *net.Interface

	addr  unix.RawSockaddrLinklayer
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	count int
	n     int
	errno unix.Errno
	fn    func(fd uintptr) bool
}

// NewPacketSender opens a raw packet socket on the interface ifname. The
// calling thread must be in a private network namespace (ErrNeedNamespace
// otherwise), since raw frames bypass routing entirely.
func NewPacketSender(ifname string, batch int) (*PacketSender, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	private, err := InPrivateNetns()
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNeedNamespace, err)
	}
	if !private {
		return nil, ErrNeedNamespace
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("flood: interface %s is not Ethernet", ifname)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("flood: opening AF_PACKET socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "packet:"+ifname)
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("flood: %w", err)
	}
	s := &PacketSender{
		f:     f,
		raw:   raw,
		iface: ifi,
		hdrs:  make([]unix.Mmsghdr, batch),
		iovs:  make([]unix.Iovec, batch),
	}
	s.addr.Family = unix.AF_PACKET
	s.addr.Protocol = htons(etherTypeIPv4)
	s.addr.Ifindex = int32(ifi.Index)
	s.addr.Halen = 6
	for i := range s.hdrs {
		h := &s.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&s.addr))
		h.Namelen = uint32(unsafe.Sizeof(s.addr))
		h.Iov = &s.iovs[i]
		h.SetIovlen(1)
	}
	s.fn = s.write
	return s, nil
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return *(*uint16)(unsafe.Pointer(&b[0]))
}

// HardwareAddr returns the interface's MAC address, the frames' source.
func (s *PacketSender) HardwareAddr() net.HardwareAddr { return s.iface.HardwareAddr }

// safeFrame checks the Ethernet type and the IPv4 source of a frame.
func safeFrame(p []byte) bool {
	const eth = frame.EthHeaderLen
	if len(p) < eth+frame.IPv4HeaderLen || binary.BigEndian.Uint16(p[12:14]) != etherTypeIPv4 {
		return false
	}
	src := [4]byte(p[eth+12 : eth+16])
	return SpoofRange.Contains(netip.AddrFrom4(src))
}

// Send writes the frames in order with sendmmsg.
func (s *PacketSender) Send(pkts [][]byte) (int, error) {
	done := 0
	for done < len(pkts) {
		k := 0
		for k < len(s.hdrs) && done+k < len(pkts) {
			p := pkts[done+k]
			if !safeFrame(p) {
				break
			}
			s.iovs[k].Base = &p[0]
			s.iovs[k].SetLen(len(p))
			k++
		}
		if k == 0 {
			return done, ErrUnsafeFrame
		}
		s.count = k
		err := s.raw.Write(s.fn)
		for i := range k {
			s.iovs[i].Base = nil
		}
		runtime.KeepAlive(pkts)
		if err != nil {
			return done, fmt.Errorf("flood: %w", err)
		}
		if s.errno != 0 {
			return done, os.NewSyscallError("sendmmsg", s.errno)
		}
		done += s.n
	}
	return done, nil
}

// write runs inside RawConn.Write; false waits for the socket to become
// writable.
func (s *PacketSender) write(fd uintptr) bool {
	for {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[0])), uintptr(s.count), 0, 0, 0)
		switch e {
		case 0:
			s.n, s.errno = int(r), 0
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			// Including ENOBUFS (a full device queue): waiting for
			// writability would not help, so the packet counts as failed.
			s.n, s.errno = 0, e
		}
		return true
	}
}

// SetDeadline sets the write deadline.
func (s *PacketSender) SetDeadline(t time.Time) error { return s.f.SetWriteDeadline(t) }

// Close closes the socket.
func (s *PacketSender) Close() error { return s.f.Close() }
