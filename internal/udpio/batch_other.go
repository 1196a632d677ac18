//go:build !linux

package udpio

import (
	"errors"
	"log/slog"
	"net"
)

// WriterConfig configures NewWriter.
type WriterConfig struct {
	// Batch is accepted for API compatibility; this platform sends one datagram per call.
	Batch int
	// GSO is ignored on this platform: segments are always sent one by one.
	GSO bool
	// Logger is accepted for API compatibility.
	Logger *slog.Logger
}

// Reader receives datagrams one per call on this platform (no recvmmsg). It is not safe
// for concurrent use.
type Reader struct{ c *net.UDPConn }

// NewReader returns a Reader for c; batch is checked but otherwise unused here.
func NewReader(c *net.UDPConn, batch int) (*Reader, error) {
	if err := checkArgs(c, batch); err != nil {
		return nil, err
	}
	return &Reader{c: c}, nil
}

// ReadBatch waits for one datagram and returns it in msgs[0].
func (r *Reader) ReadBatch(msgs []Message) (int, error) { return readOne(r.c, msgs) }

// Writer sends datagrams one per call on this platform (no sendmmsg, no GSO). It is not
// safe for concurrent use.
type Writer struct{ c *net.UDPConn }

// NewWriter returns a Writer for c.
func NewWriter(c *net.UDPConn, cfg WriterConfig) (*Writer, error) {
	if err := checkArgs(c, cfg.Batch); err != nil {
		return nil, err
	}
	return &Writer{c: c}, nil
}

// GSOEnabled is always false on this platform.
func (w *Writer) GSOEnabled() bool { return false }

// WriteBatch sends msgs in order, one datagram per segment, and returns how many
// messages were sent completely; msgs[n] is the one that failed.
func (w *Writer) WriteBatch(msgs []Message) (int, error) { return writeEach(w.c, msgs) }

func checkArgs(c *net.UDPConn, batch int) error {
	if c == nil {
		return errors.New("udpio: nil connection")
	}
	if batch < 0 || batch > MaxBatch {
		return errors.New("udpio: batch size out of range")
	}
	return nil
}
