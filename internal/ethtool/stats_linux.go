// Package ethtool: device statistics (ethtool -S) and the legacy offload
// switches (ethtool -K) through the SIOCETHTOOL ioctl, in the calling
// thread's network namespace, so tests and the evaluation need no ethtool
// binary.

package ethtool

import (
	"bytes"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offload is a legacy ethtool "set" command for one offload feature.
type Offload uint32

// The offloads the flood and the evaluation switch
// (include/uapi/linux/ethtool.h).
const (
	TXChecksum Offload = 0x17 // ETHTOOL_STXCSUM: tx-checksumming
	TSO        Offload = 0x1f // ETHTOOL_STSO: tcp-segmentation-offload
	GSO        Offload = 0x24 // ETHTOOL_SGSO: generic-segmentation-offload
	GRO        Offload = 0x2c // ETHTOOL_SGRO: generic-receive-offload
)

func (f Offload) String() string {
	switch f {
	case TXChecksum:
		return "tx-checksumming"
	case TSO:
		return "tcp-segmentation-offload"
	case GSO:
		return "generic-segmentation-offload"
	case GRO:
		return "generic-receive-offload"
	}
	return fmt.Sprintf("Offload(%#x)", uint32(f))
}

// ethtool ioctl commands and the string set of device statistics.
const (
	statsGStrings  = 0x1b
	statsGStats    = 0x1d
	statsGSSetInfo = 0x37
	statsSSet      = 1
	statsStringLen = 32
)

// statsIfreq is struct ifreq with its union holding a pointer.
type statsIfreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

func statsIoctl(ifname string, data unsafe.Pointer) error {
	var ifr statsIfreq
	if len(ifname) >= len(ifr.name) {
		return fmt.Errorf("ethtool: interface name %q too long", ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool: socket: %w", err)
	}
	defer unix.Close(fd)
	copy(ifr.name[:], ifname)
	ifr.data = data
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ifr)
	if e != 0 {
		return e
	}
	return nil
}

// SetOffload switches offload f of ifname on or off.
func SetOffload(ifname string, f Offload, on bool) error {
	v := &struct{ cmd, data uint32 }{cmd: uint32(f)}
	if on {
		v.data = 1
	}
	if err := statsIoctl(ifname, unsafe.Pointer(v)); err != nil {
		return fmt.Errorf("ethtool: %s %s on %v: %w", ifname, f, on, err)
	}
	return nil
}

// Stats returns the names and values of ifname's statistics (ethtool -S).
func Stats(ifname string) ([]string, []uint64, error) {
	// struct ethtool_sset_info with room for one count.
	sset := &struct {
		cmd, _ uint32
		mask   uint64
		n      uint32
	}{cmd: statsGSSetInfo, mask: 1 << statsSSet}
	if err := statsIoctl(ifname, unsafe.Pointer(sset)); err != nil {
		return nil, nil, fmt.Errorf("ethtool: string set of %s: %w", ifname, err)
	}
	n := int(sset.n)
	if sset.mask == 0 || n == 0 {
		return nil, nil, nil
	}
	if n > 1<<16 {
		return nil, nil, fmt.Errorf("ethtool: %s reports %d statistics", ifname, n)
	}
	// struct ethtool_gstrings: cmd, string_set, len, then the strings.
	strs := make([]byte, 12+n*statsStringLen)
	*(*uint32)(unsafe.Pointer(&strs[0])) = statsGStrings
	*(*uint32)(unsafe.Pointer(&strs[4])) = statsSSet
	*(*uint32)(unsafe.Pointer(&strs[8])) = uint32(n)
	if err := statsIoctl(ifname, unsafe.Pointer(&strs[0])); err != nil {
		return nil, nil, fmt.Errorf("ethtool: statistics names of %s: %w", ifname, err)
	}
	// struct ethtool_stats: cmd, n_stats, then 64-bit values.
	vals := make([]uint64, 1+n)
	hdr := (*[2]uint32)(unsafe.Pointer(&vals[0]))
	hdr[0], hdr[1] = statsGStats, uint32(n)
	if err := statsIoctl(ifname, unsafe.Pointer(&vals[0])); err != nil {
		return nil, nil, fmt.Errorf("ethtool: statistics of %s: %w", ifname, err)
	}
	names := make([]string, n)
	for i := range names {
		b := strs[12+i*statsStringLen : 12+(i+1)*statsStringLen]
		if j := bytes.IndexByte(b, 0); j >= 0 {
			b = b[:j]
		}
		names[i] = string(b)
	}
	return names, vals[1:], nil
}
