//go:build linux

package afxdp

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// NumQueues returns the number of receive queues of the interface with
// index ifindex in the calling thread's network namespace: open one socket
// per queue, 0..n-1.
func NumQueues(ifindex int) (int, error) {
	// The driver's active channels: a NIC allocates queues for its
	// maximum channel count, and binding to an inactive one fails.
	if n, ok, err := activeRXQueues(ifindex); err != nil || ok {
		return n, err
	}
	rx, _, err := queueCount(ifindex)
	return rx, err
}

// queueCount reads IFLA_NUM_RX_QUEUES and IFLA_NUM_TX_QUEUES over rtnetlink
// (the dump helpers live only in package syscall).
func queueCount(ifindex int) (rx, tx int, err error) {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	if err != nil {
		return 0, 0, fmt.Errorf("afxdp: rtnetlink: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return 0, 0, fmt.Errorf("afxdp: rtnetlink: %w", err)
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		idx := int32(binary.NativeEndian.Uint32(m.Data[4:8])) // ifi_index
		if int(idx) != ifindex {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return 0, 0, fmt.Errorf("afxdp: rtnetlink: %w", err)
		}
		for _, a := range attrs {
			if len(a.Value) < 4 {
				continue
			}
			switch a.Attr.Type {
			case unix.IFLA_NUM_RX_QUEUES:
				rx = int(binary.NativeEndian.Uint32(a.Value))
			case unix.IFLA_NUM_TX_QUEUES:
				tx = int(binary.NativeEndian.Uint32(a.Value))
			}
		}
		return rx, tx, nil
	}
	return 0, 0, fmt.Errorf("%w: index %d", ErrNoInterface, ifindex)
}
