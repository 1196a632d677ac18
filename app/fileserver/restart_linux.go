package fileserver

import "golang.org/x/sys/unix"

// dupFD duplicates fd, close-on-exec, keeping the file description (and
// so its non-blocking mode) shared.
func dupFD(fd uintptr) (int, error) { return unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }
