//go:build !linux

package udpio

import (
	"errors"
	"log/slog"
	"net"
)

// Setup sets the socket buffer sizes through the standard library. No offload or packet
// info is available on this platform; the reported buffer sizes are the requested ones.
func Setup(c *net.UDPConn, cfg Config) (Capabilities, error) {
	if c == nil {
		return Capabilities{}, errors.New("udpio: Setup: nil connection")
	}
	var caps Capabilities
	if ua, ok := c.LocalAddr().(*net.UDPAddr); ok {
		caps.IPv6 = ua.IP.To4() == nil
	}
	if n := bufferSize(cfg.RecvBuffer, DefaultRecvBuffer); n > 0 && c.SetReadBuffer(n) == nil {
		caps.RecvBuffer = n
	}
	if n := bufferSize(cfg.SendBuffer, DefaultSendBuffer); n > 0 && c.SetWriteBuffer(n) == nil {
		caps.SendBuffer = n
	}
	cfg.logger().Debug("udpio: socket configured (portable path, no offloads)",
		slog.Int("rcvbuf", caps.RecvBuffer), slog.Int("sndbuf", caps.SendBuffer))
	return caps, nil
}
