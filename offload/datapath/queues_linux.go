package datapath

import (
	"github.com/turboretry/turboretry/internal/ethtool"
	"github.com/turboretry/turboretry/offload/afxdp"
)

// activeQueues returns how many receive queues of the interface are in
// use: the rx plus combined channels of ETHTOOL_GCHANNELS (what "ethtool
// -l" shows, the queues an AF_XDP socket may bind to), or, for a driver
// without channel reporting, the number of receive queues the device
// allocated. The allocated count alone is wrong for devices such as veth,
// which allocate one queue per CPU and use one.
func activeQueues(name string, ifindex int) (int, error) {
	if ch, err := ethtool.GetChannels(name); err == nil && ch.RXQueues() > 0 {
		return ch.RXQueues(), nil
	}
	return afxdp.NumQueues(ifindex)
}
