package split

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/offload/afxdp"
)

// hostPortSocket sizes the host port's socket for transmission: nothing is
// ever redirected to it, so its fill and RX rings stay small and most
// frames serve TX.
var hostPortSocket = afxdp.Config{
	NumFrames:          2048,
	FillRingSize:       64,
	RXRingSize:         64,
	TXRingSize:         1024,
	CompletionRingSize: 2048,
}

// hostPort sends frames out of the host port through one AF_XDP socket on
// queue 0. The datapath's queue workers share it: an afxdp.Socket wants
// one user at a time, so a lock serializes them. Validated Initials are a
// small share of the traffic (one per connection), so the lock is cold.
type hostPort struct {
	mu   sync.Mutex
	sock *afxdp.Socket
	one  [1]afxdp.Desc // Transmit's argument, kept to avoid an allocation

	sent, failed atomic.Uint64
}

func openHostPort(name string) (*hostPort, error) {
	// An agent restarted right after a crash finds the queue still held
	// for a moment: the kernel releases the dead process's socket
	// asynchronously. Retry that briefly rather than exit.
	deadline := time.Now().Add(busyRetryFor)
	for {
		s, err := afxdp.OpenByName(name, 0, hostPortSocket)
		if err == nil {
			return &hostPort{sock: s}, nil
		}
		if !errors.Is(err, afxdp.ErrBusy) || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// busyRetryFor bounds how long openHostPort waits for a busy queue.
const busyRetryFor = 2 * time.Second

// forward copies frame into a UMEM frame and queues it for transmission.
// A frame that cannot go out (no free frame, TX ring full, oversized) is
// counted and dropped: the client retransmits its Initial.
func (h *hostPort) forward(frame []byte) {
	h.mu.Lock()
	ok := h.send(frame)
	h.mu.Unlock()
	if ok {
		h.sent.Add(1)
	} else {
		h.failed.Add(1)
	}
}

func (h *hostPort) send(frame []byte) bool {
	d, ok := h.sock.AllocFrame()
	if !ok {
		return false
	}
	buf := h.sock.Frame(d)
	if len(frame) == 0 || len(frame) > cap(buf) {
		h.sock.FreeFrame(d)
		return false
	}
	d.Len = uint32(copy(buf[:len(frame)], frame))
	h.one[0] = d
	if n, err := h.sock.Transmit(h.one[:]); n != 1 || err != nil {
		h.sock.FreeFrame(d)
		return false
	}
	return true
}

// zeroCopy reports whether the socket runs in zero-copy mode.
func (h *hostPort) zeroCopy() bool { return h.sock.ZeroCopy() }

func (h *hostPort) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.sock.Close(); err != nil {
		return fmt.Errorf("%w: closing: %w", ErrHostPort, err)
	}
	return nil
}
