package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// DriverFeatures are the XDP abilities a driver reports (enum
// netdev_xdp_act of the kernel's netdev netlink family, Linux >= 6.3).
type DriverFeatures uint64

// Driver feature bits.
const (
	// FeatureBasic: native (driver-mode) XDP with XDP_PASS, XDP_DROP and
	// XDP_TX.
	FeatureBasic DriverFeatures = 1 << iota
	// FeatureRedirect: XDP_REDIRECT, which the fast path uses to hand
	// Initials to AF_XDP.
	FeatureRedirect
	// FeatureNDOXmit: the device can be the target of a redirect.
	FeatureNDOXmit
	// FeatureXSKZeroCopy: AF_XDP sockets in zero-copy mode.
	FeatureXSKZeroCopy
)

// ErrNoNetdevFamily is returned by QueryDriverFeatures on kernels without
// the netdev netlink family (before 6.3).
var ErrNoNetdevFamily = errors.New("xdp: the kernel has no netdev netlink family (Linux >= 6.3 reports XDP features)")

// QueryDriverFeatures asks the kernel (generic netlink family "netdev",
// NETDEV_CMD_DEV_GET) what XDP the driver of interface ifindex supports,
// in the calling thread's network namespace.
func QueryDriverFeatures(ifindex int) (DriverFeatures, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return 0, fmt.Errorf("xdp: netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("xdp: netlink bind: %w", err)
	}
	name := append([]byte("netdev"), 0)
	attrs, err := genlRequest(fd, unix.GENL_ID_CTRL, unix.CTRL_CMD_GETFAMILY, 1, nlattr(unix.CTRL_ATTR_FAMILY_NAME, name))
	if errors.Is(err, unix.ENOENT) {
		return 0, ErrNoNetdevFamily
	}
	if err != nil {
		return 0, err
	}
	fam, ok := attrs[unix.CTRL_ATTR_FAMILY_ID]
	if !ok || len(fam) < 2 {
		return 0, errors.New("xdp: netlink: no family id for netdev")
	}
	const (
		netdevCmdDevGet      = 1
		netdevAttrIfindex    = 1
		netdevAttrXDPFeature = 3
	)
	idx := binary.NativeEndian.AppendUint32(nil, uint32(ifindex))
	attrs, err = genlRequest(fd, binary.NativeEndian.Uint16(fam), netdevCmdDevGet, 1, nlattr(netdevAttrIfindex, idx))
	if err != nil {
		return 0, fmt.Errorf("xdp: netdev dev-get of ifindex %d: %w", ifindex, err)
	}
	v, ok := attrs[netdevAttrXDPFeature]
	if !ok || len(v) < 8 {
		return 0, errors.New("xdp: netdev dev-get: no xdp-features attribute")
	}
	return DriverFeatures(binary.NativeEndian.Uint64(v)), nil
}

// sizeofGenlmsghdr is struct genlmsghdr: cmd, version, reserved.
const sizeofGenlmsghdr = 4

// nlattr encodes one netlink attribute.
func nlattr(typ uint16, value []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(value)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, value...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// genlRequest sends one generic netlink request and returns the top-level
// attributes of the reply.
func genlRequest(fd int, family uint16, cmd, version uint8, attrs []byte) (map[uint16][]byte, error) {
	msg := make([]byte, unix.SizeofNlMsghdr+sizeofGenlmsghdr, unix.SizeofNlMsghdr+sizeofGenlmsghdr+len(attrs))
	binary.NativeEndian.PutUint32(msg[0:], uint32(cap(msg)))
	binary.NativeEndian.PutUint16(msg[4:], family)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:], 1) // sequence
	msg[16], msg[17] = cmd, version
	msg = append(msg, attrs...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("xdp: netlink send: %w", err)
	}
	buf := make([]byte, 1<<16)
	var out map[uint16][]byte
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("xdp: netlink receive: %w", err)
		}
		for b := buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			typ := binary.NativeEndian.Uint16(b[4:])
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return nil, errors.New("xdp: netlink: truncated message")
			}
			body := b[unix.SizeofNlMsghdr:l]
			switch typ {
			case unix.NLMSG_ERROR:
				if len(body) < 4 {
					return nil, errors.New("xdp: netlink: short error")
				}
				if code := int32(binary.NativeEndian.Uint32(body)); code != 0 {
					return nil, unix.Errno(-code)
				}
				return out, nil // the ACK after the reply
			case unix.NLMSG_DONE:
				return out, nil
			default:
				if len(body) >= sizeofGenlmsghdr && out == nil {
					out = parseAttrs(body[sizeofGenlmsghdr:])
				}
			}
			next := (l + 3) &^ 3
			if next >= len(b) {
				break
			}
			b = b[next:]
		}
	}
}

// parseAttrs splits a run of netlink attributes by type, copying the
// values (the receive buffer is reused for the ACK).
func parseAttrs(b []byte) map[uint16][]byte {
	m := map[uint16][]byte{}
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:]))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3fff // without NLA_F_NESTED / NET_BYTEORDER
		if l < 4 || l > len(b) {
			break
		}
		m[typ] = append([]byte(nil), b[4:l]...)
		next := (l + 3) &^ 3
		if next > len(b) {
			break
		}
		b = b[next:]
	}
	return m
}
