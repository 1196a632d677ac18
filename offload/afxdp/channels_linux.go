//go:build linux

package afxdp

import (
	"fmt"
	"net"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolChannels is struct ethtool_channels of linux/ethtool.h.
type ethtoolChannels struct {
	cmd                                    uint32
	maxRX, maxTX, maxOther, maxCombined    uint32
	rxCount, txCount, otherCount, combined uint32
}

// ifreqData is struct ifreq with its union used as ifr_data.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte // the rest of the union
}

// ethtoolChannelsOf runs ETHTOOL_GCHANNELS or ETHTOOL_SCHANNELS (cmd) on
// the interface with index ifindex.
func ethtoolChannelsOf(ifindex int, cmd uint32, ch *ethtoolChannels) error {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return fmt.Errorf("%w: index %d", ErrNoInterface, ifindex)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("afxdp: socket for ethtool: %w", err)
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifi.Name)
	ch.cmd = cmd
	ifr.data = unsafe.Pointer(ch)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(ch)
	if errno != 0 {
		return errno
	}
	return nil
}

// activeRXQueues returns the receive queues the driver has in use (rx plus
// combined channels), which may be fewer than it allocated; ok is false
// when the driver does not report channels.
func activeRXQueues(ifindex int) (n int, ok bool, err error) {
	var ch ethtoolChannels
	if err := ethtoolChannelsOf(ifindex, unix.ETHTOOL_GCHANNELS, &ch); err != nil {
		if _, isErrno := err.(unix.Errno); isErrno {
			return 0, false, nil // no get_channels: fall back to rtnetlink
		}
		return 0, false, err
	}
	n = int(ch.rxCount + ch.combined)
	return n, n > 0, nil
}
