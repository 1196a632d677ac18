//go:build linux

// Package ethtool reads what `ethtool -l` (channels), `ethtool -k`
// (offload features) and `ethtool -i` (driver) show, with the SIOCETHTOOL
// ioctl of the calling thread's network namespace: no ethtool binary
// needed.
package ethtool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctl commands of linux/ethtool.h.
const (
	cmdGDrvInfo   = 0x03
	cmdGStrings   = 0x1b
	cmdGSSetInfo  = 0x37
	cmdGChannels  = 0x3c
	cmdGFeatures  = 0x3a
	ssFeatures    = 4 // ETH_SS_FEATURES
	stringLen     = 32
	maxFeatures   = 4096
	drvInfoSize   = 196 // struct ethtool_drvinfo
	drvInfoDriver = 4   // offset of driver[32]
)

// ErrNotSupported is returned when the driver does not answer a query
// (EOPNOTSUPP).
var ErrNotSupported = errors.New("ethtool: not supported by the driver")

// ifreq is struct ifreq with its union used as ifr_data.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// do runs one SIOCETHTOOL command whose argument is buf.
func do(iface string, buf []byte) error {
	if len(iface) >= unix.IFNAMSIZ || iface == "" {
		return fmt.Errorf("ethtool: bad interface name %q", iface)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool: socket: %w", err)
	}
	defer unix.Close(fd)
	var ifr ifreq
	copy(ifr.name[:], iface)
	ifr.data = unsafe.Pointer(&buf[0])
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(buf)
	switch {
	case errno == unix.EOPNOTSUPP:
		return fmt.Errorf("%w: %s", ErrNotSupported, iface)
	case errno != 0:
		return fmt.Errorf("ethtool %s: %w", iface, errno)
	}
	return nil
}

// Channels are the queue counts of `ethtool -l`.
type Channels struct {
	MaxRX, MaxTX, MaxOther, MaxCombined uint32
	RX, TX, Other, Combined             uint32
}

// RXQueues returns the receive queues in use: rx plus combined channels.
func (c Channels) RXQueues() int { return int(c.RX + c.Combined) }

// GetChannels runs ETHTOOL_GCHANNELS.
func GetChannels(iface string) (Channels, error) {
	buf := make([]byte, 36)
	binary.NativeEndian.PutUint32(buf, cmdGChannels)
	if err := do(iface, buf); err != nil {
		return Channels{}, err
	}
	u := func(i int) uint32 { return binary.NativeEndian.Uint32(buf[4+4*i:]) }
	return Channels{MaxRX: u(0), MaxTX: u(1), MaxOther: u(2), MaxCombined: u(3), RX: u(4), TX: u(5), Other: u(6), Combined: u(7)}, nil
}

// Feature is one offload feature of `ethtool -k`.
type Feature struct {
	Active bool
	// Fixed: the driver does not let it change ("[fixed]" in ethtool -k).
	Fixed bool
}

// GetFeatures returns the offload features by their ethtool names
// (tx-udp-segmentation, rx-gro-list, ...): ETHTOOL_GSSET_INFO and
// ETHTOOL_GSTRINGS for the names, ETHTOOL_GFEATURES for the bits.
func GetFeatures(iface string) (map[string]Feature, error) {
	info := make([]byte, 4+4+8+4)
	binary.NativeEndian.PutUint32(info, cmdGSSetInfo)
	binary.NativeEndian.PutUint64(info[8:], 1<<ssFeatures)
	if err := do(iface, info); err != nil {
		return nil, err
	}
	if binary.NativeEndian.Uint64(info[8:])&(1<<ssFeatures) == 0 {
		return nil, fmt.Errorf("%w: %s has no feature names", ErrNotSupported, iface)
	}
	n := int(binary.NativeEndian.Uint32(info[16:]))
	if n <= 0 || n > maxFeatures {
		return nil, fmt.Errorf("ethtool %s: %d features", iface, n)
	}
	strs := make([]byte, 12+n*stringLen)
	binary.NativeEndian.PutUint32(strs, cmdGStrings)
	binary.NativeEndian.PutUint32(strs[4:], ssFeatures)
	binary.NativeEndian.PutUint32(strs[8:], uint32(n))
	if err := do(iface, strs); err != nil {
		return nil, err
	}
	blocks := (n + 31) / 32
	feats := make([]byte, 8+16*blocks)
	binary.NativeEndian.PutUint32(feats, cmdGFeatures)
	binary.NativeEndian.PutUint32(feats[4:], uint32(blocks))
	if err := do(iface, feats); err != nil {
		return nil, err
	}
	out := make(map[string]Feature, n)
	for i := range n {
		name := cString(strs[12+i*stringLen : 12+(i+1)*stringLen])
		if name == "" {
			continue
		}
		b := feats[8+16*(i/32):]
		bit := uint32(1) << (i % 32)
		available := binary.NativeEndian.Uint32(b[0:])&bit != 0
		active := binary.NativeEndian.Uint32(b[8:])&bit != 0
		never := binary.NativeEndian.Uint32(b[12:])&bit != 0
		out[name] = Feature{Active: active, Fixed: !available || never}
	}
	return out, nil
}

// Driver returns the driver name of `ethtool -i`.
func Driver(iface string) (string, error) {
	buf := make([]byte, drvInfoSize)
	binary.NativeEndian.PutUint32(buf, cmdGDrvInfo)
	if err := do(iface, buf); err != nil {
		return "", err
	}
	return cString(buf[drvInfoDriver : drvInfoDriver+32]), nil
}

// cString returns b up to its first NUL byte.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
