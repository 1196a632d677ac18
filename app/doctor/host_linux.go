package doctor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/ethtool"
	"github.com/turboretry/turboretry/offload/reuseport"
	"github.com/turboretry/turboretry/offload/xdp"
)

// Host returns the System of this machine, in the calling thread's
// network namespace.
func Host() System { return host{} }

type host struct{}

func (host) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (host) UDPOffload() (gso, gro bool, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, false, err
	}
	defer unix.Close(fd)
	// Kernels that know UDP_SEGMENT answer the getsockopt, as
	// internal/udpio probes it.
	_, gsoErr := unix.GetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
	groErr := unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	return gsoErr == nil, groErr == nil, nil
}

func (host) Features(iface string) (map[string]Feature, error) {
	f, err := ethtool.GetFeatures(iface)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Feature, len(f))
	for k, v := range f {
		out[k] = Feature{Active: v.Active, Fixed: v.Fixed}
	}
	return out, nil
}

func (host) Channels(iface string) (Channels, error) {
	ch, err := ethtool.GetChannels(iface)
	if errors.Is(err, ethtool.ErrNotSupported) {
		// No channel reporting (veth before 5.x, many virtual devices):
		// one queue as far as XDP sockets go.
		return Channels{RX: 1, MaxRX: 1}, nil
	}
	if err != nil {
		return Channels{}, err
	}
	return Channels{RX: int(ch.RX), MaxRX: int(ch.MaxRX), Combined: int(ch.Combined), MaxCombined: int(ch.MaxCombined)}, nil
}

func (host) XDPFeatures(iface string) (XDP, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return XDP{}, err
	}
	f, err := xdp.QueryDriverFeatures(ifi.Index)
	if err != nil {
		return XDP{}, err
	}
	return XDP{Native: f&xdp.FeatureBasic != 0, Redirect: f&xdp.FeatureRedirect != 0, ZeroCopy: f&xdp.FeatureXSKZeroCopy != 0}, nil
}

func (host) Driver(iface string) (string, error) { return ethtool.Driver(iface) }

func (host) ReuseportBPF() error {
	err := reuseport.Probe()
	if errors.Is(err, reuseport.ErrPermission) {
		return fmt.Errorf("%w: %w", ErrPermission, err)
	}
	return err
}

func (host) NumCPU() int { return runtime.NumCPU() }
