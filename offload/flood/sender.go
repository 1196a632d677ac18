package flood

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/turboretry/turboretry/internal/udpio"
)

// DefaultBatch is the number of packets handed to one Send call.
const DefaultBatch = 64

// Sender transmits batches of packets. UDPSender sends UDP payloads,
// PacketSender whole Ethernet frames; an AF_XDP sender can implement the
// same interface.
type Sender interface {
	// Send transmits pkts in order and returns how many went out. On an
	// error n < len(pkts) and pkts[n] is the packet that failed; the caller
	// may skip it and continue with pkts[n+1:].
	Send(pkts [][]byte) (n int, err error)
	// SetDeadline bounds blocking in Send, so that a run always ends.
	SetDeadline(t time.Time) error
	Close() error
}

// UDPSender sends UDP payloads to one target from an ephemeral port with
// sendmmsg (internal/udpio). It is not safe for concurrent use.
type UDPSender struct {
	conn   *net.UDPConn
	w      *udpio.Writer
	target netip.AddrPort
	msgs   []udpio.Message
}

// NewUDPSender opens a socket for sending to target. The target must be
// loopback, or the calling goroutine's thread must be in a private network
// namespace (see CheckTarget). A loopback target is sent from a socket
// bound to loopback, so nothing can leave the host.
func NewUDPSender(target netip.AddrPort, batch int) (*UDPSender, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	target = netip.AddrPortFrom(target.Addr().Unmap(), target.Port())
	if target.Port() == 0 {
		return nil, fmt.Errorf("flood: target %v has no port", target)
	}
	// The socket belongs to the namespace of the thread that creates it:
	// check and create on the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := CheckTarget(target.Addr()); err != nil {
		return nil, err
	}
	local := &net.UDPAddr{}
	network := "udp4"
	if target.Addr().Is6() {
		network = "udp6"
	}
	if target.Addr().IsLoopback() {
		local.IP = target.Addr().AsSlice()
	}
	conn, err := net.ListenUDP(network, local)
	if err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	w, err := udpio.NewWriter(conn, udpio.WriterConfig{Batch: batch})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("flood: %w", err)
	}
	return &UDPSender{conn: conn, w: w, target: target, msgs: make([]udpio.Message, batch)}, nil
}

// LocalAddr returns the socket's address.
func (s *UDPSender) LocalAddr() netip.AddrPort {
	return s.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Send sends each packet as one datagram to the target.
func (s *UDPSender) Send(pkts [][]byte) (int, error) {
	done := 0
	for done < len(pkts) {
		chunk := pkts[done:]
		if len(chunk) > len(s.msgs) {
			chunk = chunk[:len(s.msgs)]
		}
		msgs := s.msgs[:len(chunk)]
		for i, p := range chunk {
			msgs[i] = udpio.Message{Buf: p, Addr: s.target}
		}
		n, err := s.w.WriteBatch(msgs)
		for i := range msgs {
			msgs[i].Buf = nil // do not keep packets alive
		}
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// SetDeadline sets the socket's write deadline.
func (s *UDPSender) SetDeadline(t time.Time) error { return s.conn.SetWriteDeadline(t) }

// Close closes the socket.
func (s *UDPSender) Close() error { return s.conn.Close() }
