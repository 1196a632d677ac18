//go:build !linux

package flood

import (
	"errors"
	"net"
	"time"
)

// PacketSender needs Linux AF_PACKET sockets.
type PacketSender struct{}

// NewPacketSender fails outside Linux.
func NewPacketSender(ifname string, batch int) (*PacketSender, error) {
	return nil, errors.New("flood: raw frames need Linux (AF_PACKET)")
}

// HardwareAddr returns nil.
func (*PacketSender) HardwareAddr() net.HardwareAddr { return nil }

// Send fails.
func (*PacketSender) Send([][]byte) (int, error) { return 0, errors.New("flood: no raw sockets") }

// SetDeadline does nothing.
func (*PacketSender) SetDeadline(time.Time) error { return nil }

// Close does nothing.
func (*PacketSender) Close() error { return nil }
