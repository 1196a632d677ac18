//go:build linux

package afxdp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// classify wraps an errno in the package error that names its usual cause,
// keeping the errno itself matchable too.
func classify(e error) error {
	var sentinel error
	switch e {
	case unix.EPERM, unix.EACCES:
		sentinel = ErrPermission
	case unix.EAFNOSUPPORT, unix.EOPNOTSUPP, unix.EPROTONOSUPPORT:
		sentinel = ErrNotSupported
	case unix.ENODEV, unix.ENXIO:
		sentinel = ErrNoInterface
	case unix.EBUSY:
		sentinel = ErrBusy
	default:
		return e
	}
	return fmt.Errorf("%w (%w)", sentinel, e)
}
