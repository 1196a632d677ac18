package udpio

import "log/slog"

// Default socket buffer sizes requested by Setup: enough to absorb bursts at high packet
// rates (the kernel may cap them at net.core.rmem_max / wmem_max unless forced).
const (
	DefaultRecvBuffer = 16 << 20
	DefaultSendBuffer = 16 << 20
)

// Config tunes Setup. The zero value asks for everything with default buffer sizes.
type Config struct {
	// RecvBuffer and SendBuffer are the requested SO_RCVBUF / SO_SNDBUF sizes in bytes
	// (0: the defaults above; negative: leave the socket's value alone).
	RecvBuffer int
	SendBuffer int
	// DisableGSO and DisableGRO keep the offloads off even where the kernel has them.
	DisableGSO bool
	DisableGRO bool
	// Logger receives Debug records about what was enabled (nil: slog.Default()).
	Logger *slog.Logger
}

// Capabilities reports what Setup enabled on a socket.
type Capabilities struct {
	// IPv6 is set for an AF_INET6 socket; DualStack when it also carries IPv4.
	IPv6      bool
	DualStack bool
	// GSO: the kernel accepts UDP_SEGMENT (Linux >= 4.18); pass it to NewWriter.
	GSO bool
	// GRO: UDP_GRO is on (Linux >= 5.0); Reader buffers must then be GROBufferSize.
	GRO bool
	// PacketInfo: received messages report Message.Local and Message.IfIndex.
	PacketInfo bool
	// ECN: received messages report Message.ECN.
	ECN bool
	// DontFragment: path MTU discovery is in probe mode (DF set, kernel PMTU cache
	// ignored), so the transport's own DPLPMTUD decides the packet size.
	DontFragment bool
	// RecvBuffer and SendBuffer are the sizes the kernel reports after setup (Linux
	// reports twice the usable size); BuffersForced says SO_*BUFFORCE was accepted.
	RecvBuffer    int
	SendBuffer    int
	BuffersForced bool
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

func bufferSize(requested, def int) int {
	if requested == 0 {
		return def
	}
	return requested
}
