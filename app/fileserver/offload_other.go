//go:build !linux

package fileserver

import (
	"errors"
	"log/slog"

	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

// startOffload fails here: the XDP datapath needs little-endian Linux.
func startOffload(*OffloadConfig, uint16, *token.KeyRing, *quic.Transport, *slog.Logger) (offloader, error) {
	return nil, errors.New("offload xdp needs Linux on a little-endian architecture")
}
