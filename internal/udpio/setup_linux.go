package udpio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"golang.org/x/sys/unix"
)

// Setup configures a UDP socket for the QUIC fast path and reports what it got: large
// socket buffers (SO_RCVBUFFORCE/SO_SNDBUFFORCE when privileged, else SO_RCVBUF/SO_SNDBUF
// up to the sysctl limits), packet info and ECN on receive, path MTU discovery in probe
// mode (DF set), UDP GRO, and whether UDP GSO is available. An option the kernel refuses
// is reported as off, not as an error; the error is for a socket that cannot be used.
func Setup(c *net.UDPConn, cfg Config) (Capabilities, error) {
	if c == nil {
		return Capabilities{}, errors.New("udpio: Setup: nil connection")
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return Capabilities{}, fmt.Errorf("udpio: Setup: %w", err)
	}
	var caps Capabilities
	var perr error
	if err := raw.Control(func(fd uintptr) { caps, perr = configure(int(fd), cfg) }); err != nil {
		return Capabilities{}, fmt.Errorf("udpio: Setup: %w", err)
	}
	if perr != nil {
		return Capabilities{}, perr
	}
	log := cfg.logger()
	if log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug("udpio: socket configured",
			slog.String("local", c.LocalAddr().String()),
			slog.Bool("ipv6", caps.IPv6), slog.Bool("dual_stack", caps.DualStack),
			slog.Bool("gso", caps.GSO), slog.Bool("gro", caps.GRO),
			slog.Bool("pktinfo", caps.PacketInfo), slog.Bool("ecn", caps.ECN),
			slog.Bool("dont_fragment", caps.DontFragment),
			slog.Int("rcvbuf", caps.RecvBuffer), slog.Int("sndbuf", caps.SendBuffer),
			slog.Bool("buffers_forced", caps.BuffersForced))
	}
	return caps, nil
}

func configure(fd int, cfg Config) (Capabilities, error) {
	var caps Capabilities
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return caps, fmt.Errorf("udpio: Setup: reading socket family: %w", err)
	}
	caps.IPv6 = domain == unix.AF_INET6
	if caps.IPv6 {
		v6only, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
		caps.DualStack = err == nil && v6only == 0
	}
	hasV4 := !caps.IPv6 || caps.DualStack

	rf := setBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, bufferSize(cfg.RecvBuffer, DefaultRecvBuffer))
	sf := setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, bufferSize(cfg.SendBuffer, DefaultSendBuffer))
	caps.BuffersForced = rf && sf
	caps.RecvBuffer, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	caps.SendBuffer, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)

	// Each family's option must take where that family can arrive.
	caps.PacketInfo, caps.ECN, caps.DontFragment = true, true, true
	if hasV4 {
		caps.PacketInfo = caps.PacketInfo && setInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
		caps.ECN = caps.ECN && setInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		caps.DontFragment = caps.DontFragment && setInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE)
	}
	if caps.IPv6 {
		caps.PacketInfo = caps.PacketInfo && setInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1)
		caps.ECN = caps.ECN && setInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		caps.DontFragment = caps.DontFragment && setInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE)
	}

	if !cfg.DisableGSO {
		// Kernels that know UDP_SEGMENT answer the getsockopt; older ones say ENOPROTOOPT.
		_, err := unix.GetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		caps.GSO = err == nil
	}
	if !cfg.DisableGRO {
		caps.GRO = setInt(fd, unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}
	return caps, nil
}

func setInt(fd, level, opt, value int) bool {
	return unix.SetsockoptInt(fd, level, opt, value) == nil
}

// setBuffer raises a socket buffer to size bytes: first with the privileged option that
// ignores net.core.[rw]mem_max, then with the ordinary one. It never shrinks a buffer
// and reports whether the privileged option was used.
func setBuffer(fd, forceOpt, opt, size int) (forced bool) {
	if size <= 0 {
		return false
	}
	// The kernel stores (and reports) twice the requested size.
	if cur, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt); err == nil && cur/2 >= size {
		return false
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, forceOpt, size) == nil {
		return true
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, size)
	return false
}
