package flood

import (
	"errors"
	"fmt"
	"net/netip"
)

// Errors for runs the test network rules forbid.
var (
	// ErrUnsafeTarget: the target is not loopback and the tool is not in a
	// private network namespace.
	ErrUnsafeTarget = errors.New("flood: refusing to send: docs/design.md allows flood traffic only to loopback " +
		"(127.0.0.0/8, ::1) or inside a network namespace created for the test; " +
		"run inside one (e.g. ip netns exec NAME) or target loopback")
	// ErrNeedNamespace: raw frames are only sent from a private namespace.
	ErrNeedNamespace = errors.New("flood: refusing raw frames outside a private network namespace " +
		"(docs/design.md test network rules); create one and run inside it (ip netns exec NAME)")
	// ErrUnbounded: a run needs both a packet count and a duration.
	ErrUnbounded = errors.New("flood: refusing an unbounded run: both a positive count and a positive duration are required")
)

// initNetNSInode is the fixed inode number of the initial network
// namespace in Linux (PROC_NET_INIT_INO, include/linux/proc_ns.h).
const initNetNSInode = 0xEFFFFFF9

// isPrivateNetns decides from the namespace inodes of this thread and of
// PID 1 (pid1OK false when PID 1's could not be read) whether the thread
// is in a network namespace other than the initial one. Both tests must
// pass: being PID 1's namespace, or the kernel's initial one, is refused.
func isPrivateNetns(self, pid1 uint64, pid1OK bool) bool {
	if self == 0 || self == initNetNSInode {
		return false
	}
	return !pid1OK || self != pid1
}

// CheckTarget applies the test network rules to a destination address:
// loopback is always allowed, anything else only from a private network
// namespace of the calling thread. Callers lock the OS thread around the
// check and the socket creation, so that both see the same namespace.
func CheckTarget(dst netip.Addr) error {
	if !dst.IsValid() {
		return fmt.Errorf("flood: invalid target address")
	}
	if dst.Unmap().IsLoopback() {
		return nil
	}
	ok, err := InPrivateNetns()
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrUnsafeTarget, err)
	}
	if !ok {
		return fmt.Errorf("%w: target %v", ErrUnsafeTarget, dst)
	}
	return nil
}
