package afxdp

import "errors"

// Errors returned by Open, wrapped with the detail; match with errors.Is.
var (
	// ErrPermission: the process lacks CAP_NET_RAW (sockets) or CAP_BPF /
	// CAP_NET_ADMIN (maps); run as root.
	ErrPermission = errors.New("afxdp: permission denied (need root or CAP_NET_RAW+CAP_BPF)")
	// ErrNoInterface: no interface with that index or name in the caller's
	// network namespace.
	ErrNoInterface = errors.New("afxdp: no such interface")
	// ErrQueueRange: the queue id is not below the interface's queue count.
	ErrQueueRange = errors.New("afxdp: queue out of range")
	// ErrNotSupported: the kernel has no AF_XDP (EAFNOSUPPORT), or the
	// driver cannot do the requested zero-copy mode.
	ErrNotSupported = errors.New("afxdp: not supported")
	// ErrBusy: another socket (or one still being torn down) holds the queue.
	ErrBusy = errors.New("afxdp: queue busy")
	// ErrConfig: the Config is invalid (sizes not powers of two, etc.).
	ErrConfig = errors.New("afxdp: invalid config")
	// ErrClosed: the socket was closed.
	ErrClosed = errors.New("afxdp: socket closed")
)
