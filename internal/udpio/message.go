package udpio

import (
	"errors"
	"net/netip"

	"github.com/turboretry/turboretry/internal/protocol"
)

// DefaultBatch is the batch size used when NewReader or NewWriter is given zero.
const DefaultBatch = 32

// MaxBatch bounds the batch size (the kernel's UIO_MAXIOV limit for recvmmsg/sendmmsg).
const MaxBatch = 1024

// MaxGSOSegments is the most segments one Message may carry (the kernel's UDP_MAX_SEGMENTS
// on older kernels; newer ones allow more, but the transport never needs that many).
const MaxGSOSegments = 64

// GROBufferSize is the receive buffer size a Reader needs per Message when GRO is
// enabled: the kernel coalesces up to a full 64 KiB datagram, and what does not fit is
// lost (Message.Truncated).
const GROBufferSize = 1 << 16

// Errors returned for bad Message fields. They are wrapped with the message index.
var (
	ErrInvalidAddr     = errors.New("udpio: invalid or missing destination address")
	ErrAddrFamily      = errors.New("udpio: address family does not match the socket")
	ErrSegmentSize     = errors.New("udpio: segment size out of range")
	ErrTooManySegments = errors.New("udpio: too many segments in one message")
)

// Message is one datagram, or one GSO/GRO buffer holding several datagrams of one flow.
//
// For ReadBatch, Buf is the caller's buffer (len(Buf) bytes are offered to the kernel)
// and every other field is output. For WriteBatch, Buf, Addr, Local, IfIndex and
// SegmentSize are input and N is output.
type Message struct {
	// Buf holds the datagram payload. It is never resliced by this package.
	Buf []byte
	// N is the number of bytes received into Buf, or sent from it.
	N int
	// Addr is the peer: the source of a received datagram (IPv4 peers on a dual-stack
	// socket are reported unmapped) or the destination of a sent one.
	Addr netip.AddrPort
	// Local is the destination address of a received datagram when packet info is
	// enabled, or the source address to send from (zero: the kernel chooses).
	Local netip.Addr
	// IfIndex is the interface a datagram arrived on, or the one to send on (0: any).
	IfIndex int
	// SegmentSize, when positive and smaller than the payload, says that the payload is
	// a run of datagrams of SegmentSize bytes each, the last one possibly shorter. On
	// receive it comes from UDP GRO; on send it asks for UDP GSO (or, without GSO
	// support, for one datagram per segment).
	SegmentSize int
	// ECN is the ECN codepoint of a received datagram (ECNNotECT when unknown), or the
	// one to send a datagram with (the whole GSO buffer).
	ECN protocol.ECN
	// Truncated reports that the datagram did not fit into Buf and the rest was lost.
	Truncated bool
}

// Data returns the received bytes, Buf[:N], clamped to Buf.
func (m *Message) Data() []byte {
	return m.Buf[:max(0, min(m.N, len(m.Buf)))]
}

// Datagrams appends the datagrams of a received Message to dst: one for a plain
// datagram, several for a GRO buffer.
func (m *Message) Datagrams(dst [][]byte) [][]byte {
	return SplitSegments(dst, m.Data(), m.SegmentSize)
}

// validateSegments checks the GSO fields of a Message to be sent.
func validateSegments(m *Message) error {
	seg := m.SegmentSize
	if seg < 0 || seg > 0xffff {
		return ErrSegmentSize
	}
	if seg > 0 && len(m.Buf) > seg && (len(m.Buf)+seg-1)/seg > MaxGSOSegments {
		return ErrTooManySegments
	}
	return nil
}
