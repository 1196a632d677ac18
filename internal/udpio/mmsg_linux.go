package udpio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// x/sys/unix has no recvmmsg/sendmmsg wrappers, so these issue the raw system calls.
//
// Memory safety: hdrs and everything it points to (iovecs, sockaddr and control buffers,
// the caller's payload buffers) are Go heap objects referenced through typed pointer
// fields, so the garbage collector keeps them alive, and the Go heap never moves objects.
// The conversion to uintptr happens in the call expression of an assembly function, which
// keeps hdrs itself alive for the duration of the call. The kernel keeps no reference
// after returning, and the callers clear the payload pointers afterwards so that a Reader
// or Writer does not pin the caller's buffers in memory. (runtime.Pinner would add nothing
// here and allocates once more than five objects are pinned, which would break the
// zero-allocation batch path.)

func recvmmsg(fd uintptr, hdrs []unix.Mmsghdr) (int, unix.Errno) {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
	return int(n), e
}

// sendmmsg is a raw system call: the socket is non-blocking, so the call
// never waits, and a plain one would let the scheduler's monitor take the
// P away from a send that runs long (on loopback the receiver's delivery
// runs inside it), waking another thread to run it and putting this one
// to sleep when the send returns: context switches that cost more than
// the send.
func sendmmsg(fd uintptr, hdrs []unix.Mmsghdr) (int, unix.Errno) {
	n, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
	return int(n), e
}
