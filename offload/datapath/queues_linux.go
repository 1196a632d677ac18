package datapath

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/offload/afxdp"
)

// activeQueues returns how many receive queues of the interface are in
// use: the channel count of ETHTOOL_GCHANNELS (what "ethtool -l" shows, the
// queues an AF_XDP socket may bind to), or, for a driver without channel
// reporting, the number of receive queues the device allocated. The
// allocated count alone is wrong for devices such as veth, which allocate
// one queue per CPU and use one.
func activeQueues(name string, ifindex int) (int, error) {
	if n, ok := ethtoolChannels(name); ok && n > 0 {
		return n, nil
	}
	return afxdp.NumQueues(ifindex)
}

// ethtoolChannels reads max(rx, combined) channels with the
// ETHTOOL_GCHANNELS ioctl in the calling thread's network namespace.
func ethtoolChannels(name string) (int, bool) {
	const ethtoolGCHANNELS = 0x3c
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	// struct ethtool_channels: cmd, then max and current rx, tx, other and
	// combined counts.
	var ch struct {
		cmd                                         uint32
		maxRX, maxTX, maxOther, maxCombined         uint32
		rxCount, txCount, otherCount, combinedCount uint32
	}
	ch.cmd = ethtoolGCHANNELS
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	if len(name) >= unix.IFNAMSIZ {
		return 0, false
	}
	copy(ifr.name[:], name)
	ifr.data = unsafe.Pointer(&ch)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ch)
	if e != 0 {
		return 0, false
	}
	return int(max(ch.rxCount, ch.combinedCount)), true
}
