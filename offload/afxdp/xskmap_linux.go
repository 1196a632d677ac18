//go:build linux

package afxdp

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// Register stores the socket in slot key of an XSKMAP (usually its queue
// id: an XDP program redirects with bpf_redirect_map(map, rx_queue_index)).
func (s *Socket) Register(m *ebpf.Map, key uint32) error {
	if s.closed {
		return ErrClosed
	}
	if m == nil || m.Type() != ebpf.XSKMap {
		return fmt.Errorf("%w: Register needs an XSKMAP", ErrConfig)
	}
	if err := m.Put(key, uint32(s.fd)); err != nil {
		return fmt.Errorf("afxdp: XSKMAP slot %d: %w", key, err)
	}
	return nil
}
