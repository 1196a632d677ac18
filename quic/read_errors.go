package quic

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Read errors. What the socket's read returns falls in one of two kinds:
//
//   - temporary: a timeout, an ICMP report (ECONNREFUSED, EHOSTUNREACH and
//     the like), a lack of buffers (ENOBUFS, ENOMEM), an interrupted call.
//     The read loop tries again after a pause that doubles from
//     minReadBackoff up to maxReadBackoff, and a datagram read resets it;
//   - persistent: the socket is closed (net.ErrClosed) or no socket
//     (EBADF, ENOTSOCK, EINVAL, EFAULT), an application PacketConn fails
//     with an error that is not a net.Error, or a temporary error repeats
//     maxReadFailures times in a row with no datagram read in between
//     (about 6 s of failing). The Transport closes with the error
//     (ErrTransportClosed wrapping it), which its listener and every
//     connection on it report.
//
// quic-go retries only errors whose Temporary method says so, without a
// pause, and closes on any other: a UDP socket that reports one ICMP error
// ends it.
const (
	minReadBackoff  = time.Millisecond
	maxReadBackoff  = time.Second
	maxReadFailures = 16
)

// readRetry is the read loop's count of failed reads in a row.
type readRetry struct{ failures int }

// persistentReadError reports whether err means the socket will not
// read again.
func persistentReadError(err error) bool {
	for _, e := range []error{net.ErrClosed, syscall.EBADF, syscall.ENOTSOCK, syscall.EINVAL, syscall.EFAULT} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return !errors.As(err, &ne)
}

// readBackoff is the pause after the n-th failed read in a row (n >= 1).
func readBackoff(n int) time.Duration {
	if n > 11 {
		return maxReadBackoff
	}
	return min(minReadBackoff<<(n-1), maxReadBackoff)
}

// readFailed handles a read error and reports whether reading must stop:
// the Transport is closing, or err closes it. Otherwise it returns after
// the backoff (at once when the Transport closes meanwhile).
func (t *Transport) readFailed(err error, r *readRetry) bool {
	if t.isClosed() {
		return true
	}
	r.failures++
	if persistentReadError(err) || r.failures >= maxReadFailures {
		// Asynchronous: closing waits for this loop to end.
		go t.closeWith(&transportClosedError{err: err}, true)
		return true
	}
	timer := time.NewTimer(readBackoff(r.failures))
	defer timer.Stop()
	select {
	case <-timer.C:
		return false
	case <-t.closedCh:
		return true
	}
}
