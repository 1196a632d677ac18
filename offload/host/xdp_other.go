//go:build !linux

package host

import (
	"errors"

	"github.com/turboretry/turboretry/quic"
)

// attachXDP fails here: the XDP datapath needs Linux.
func attachXDP([]*quic.Transport, func([]byte) int, *Config, uint16) (agentPart, error) {
	return nil, errors.New("offload xdp needs Linux")
}
