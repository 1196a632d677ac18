package fileserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/reuseport"
)

// Inheritance is what a running server hands to the process that takes
// over from it on a restart (docs/operations.md): its listening TCP
// sockets, which both processes share until the old one stops accepting,
// and its steering program. Its UDP sockets stay with it: they serve its
// QUIC connections until they are done.
type Inheritance struct {
	// TCP is the HTTPS listener; Metrics the metrics listener, or nil.
	TCP, Metrics *os.File
	// Steering is the sk_reuseport program and maps.
	Steering *reuseport.Inheritance
}

// Close closes the files.
func (in *Inheritance) Close() {
	for _, f := range []*os.File{in.TCP, in.Metrics} {
		if f != nil {
			_ = f.Close()
		}
	}
	if in.Steering != nil {
		for _, f := range in.Steering.Files {
			_ = f.Close()
		}
	}
}

// ErrNotRestartable is wrapped by Handover when this server cannot hand
// over without dropping connections.
var ErrNotRestartable = errors.New("this server cannot hand over without losing connections")

// listen binds the TCP and metrics listeners, or takes the inherited ones.
// probeUDP checks that HTTP/3 will be able to bind the TCP port's number
// (see listenTCPWithUDPFree); it runs where the UDP sockets will live.
func (c *Config) listen(probeUDP func(*net.TCPAddr) error) (ln, metricsLn net.Listener, err error) {
	in := c.Inherited
	if in != nil && in.TCP != nil {
		if ln, err = net.FileListener(in.TCP); err != nil {
			return nil, nil, fmt.Errorf("the inherited TCP listener: %w", err)
		}
		_ = in.TCP.Close()
		in.TCP = nil
	} else if ln, err = c.listenTCPWithUDPFree(probeUDP); err != nil {
		return nil, nil, err
	}
	if c.MetricsAddr == "" {
		return ln, nil, nil
	}
	if in != nil && in.Metrics != nil {
		metricsLn, err = net.FileListener(in.Metrics)
		_ = in.Metrics.Close()
		in.Metrics = nil
		if err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("the inherited metrics listener: %w", err)
		}
		return ln, metricsLn, nil
	}
	if metricsLn, err = net.Listen("tcp", c.MetricsAddr); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("metrics: listening on %s: %w", c.MetricsAddr, err)
	}
	return ln, metricsLn, nil
}

// udpPortTries bounds how many kernel-chosen ports listenTCPWithUDPFree
// tries before it gives up.
const udpPortTries = 16

// listenTCPWithUDPFree binds the TCP listener on a port whose number is
// also free for UDP, where HTTP/3 binds later (in Serve, after "Serving"
// is printed). Without the check, a port the kernel chose for TCP could
// be held by some other program's UDP socket, and the server would
// announce a URL and then fail; with an explicit port, the operator gets
// the UDP error at once. The probe socket is closed at once, so a socket
// bound in between can still take the port; Serve then fails, clearly.
func (c *Config) listenTCPWithUDPFree(probeUDP func(*net.TCPAddr) error) (net.Listener, error) {
	for try := 1; ; try++ {
		ln, err := net.Listen("tcp", c.Addr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", c.Addr, err)
		}
		tcp := ln.Addr().(*net.TCPAddr)
		if probeUDP == nil {
			return ln, nil
		}
		err = probeUDP(tcp)
		if err == nil {
			return ln, nil
		}
		ln.Close()
		if !c.kernelChoosesPort() || try == udpPortTries || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("HTTP/3: UDP port %d (the TCP port's number) is not free: %w", tcp.Port, err)
		}
	}
}

// kernelChoosesPort reports whether Addr leaves the port to the kernel.
func (c *Config) kernelChoosesPort() bool {
	_, port, err := net.SplitHostPort(c.Addr)
	return err == nil && (port == "" || port == "0")
}

// probeUDPPort binds and closes a UDP socket on the TCP address's port.
func probeUDPPort(tcp *net.TCPAddr) error {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: tcp.IP, Port: tcp.Port, Zone: tcp.Zone})
	if err != nil {
		return err
	}
	return c.Close()
}

// CanHandOver returns nil when Handover would succeed, or why not.
func (s *Server) CanHandOver() error {
	s.h3.mu.Lock()
	w := s.h3.workers
	s.h3.mu.Unlock()
	if w == nil {
		return fmt.Errorf("%w: HTTP/3 is not serving yet", ErrNotRestartable)
	}
	if w.Group.Mode() != reuseport.ModeSteered {
		return notSteered(w.Group.Reason())
	}
	if off := s.cfg.Offload; off.Mode == host.ModeXDP && off.CacheOnly {
		return fmt.Errorf("%w: %w", ErrNotRestartable, host.ErrReleaseBloomOnly)
	}
	return nil
}

func notSteered(reason error) error {
	return fmt.Errorf("%w: the sk_reuseport steering program is not loaded (%v), so the new process's sockets would receive this one's QUIC packets; run serve as root or with CAP_BPF, or stop and start it (QUIC connections are lost)",
		ErrNotRestartable, reason)
}

// Handover returns what a successor needs to take over (duplicated
// descriptors, the caller closes them once passed on). It fails, saying
// why, where connections would be lost: before HTTP/3 serves, and without
// the steering program (not root, no CAP_BPF), where a successor's sockets
// would receive the packets of this process's connections.
func (s *Server) Handover() (*Inheritance, error) {
	s.h3.mu.Lock()
	w := s.h3.workers
	s.h3.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("%w: HTTP/3 is not serving yet", ErrNotRestartable)
	}
	steering, err := w.Group.Handover()
	if err != nil {
		return nil, notSteered(w.Group.Reason())
	}
	in := &Inheritance{Steering: steering}
	if in.TCP, err = listenerFile(s.ln); err != nil {
		in.Close()
		return nil, err
	}
	if s.metricsLn != nil {
		if in.Metrics, err = listenerFile(s.metricsLn); err != nil {
			in.Close()
			return nil, err
		}
	}
	return in, nil
}

// listenerFile duplicates a listener's descriptor. Not TCPListener.File:
// that switches the socket, which both descriptors share, to blocking mode,
// and this process's Accept would then block in the kernel where Close
// cannot interrupt it.
func listenerFile(ln net.Listener) (*os.File, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, fmt.Errorf("%w: listener %T", ErrNotRestartable, ln)
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup int
	var derr error
	if err := rc.Control(func(fd uintptr) { dup, derr = dupFD(fd) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("duplicating the listener: %w", derr)
	}
	return os.NewFile(uintptr(dup), "listener"), nil
}

// TakeBack makes this server take new HTTP/3 connections again after a
// successor failed (it may have switched the steering before it did).
func (s *Server) TakeBack() error {
	s.h3.mu.Lock()
	w := s.h3.workers
	s.h3.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Group.Activate()
}

// Drain sets how long the graceful shutdown that follows waits for
// requests and connections to finish (the drain after a handover); cancel
// Serve's context to start it.
func (s *Server) Drain(timeout time.Duration) { s.shutdownTimeout.Store(int64(timeout)) }

// Generation returns the steering generation of the HTTP/3 sockets (0 for
// a server started fresh), or -1 before HTTP/3 serves.
func (s *Server) Generation() int {
	s.h3.mu.Lock()
	defer s.h3.mu.Unlock()
	if s.h3.workers == nil {
		return -1
	}
	return s.h3.workers.Group.Generation()
}

// ReleaseOffload gives the integrated XDP offload's interface up for a
// successor (restart): the program detaches and the AF_XDP sockets close,
// so until the successor attaches its own every packet reaches the kernel
// stack and this process's own address validation. The connections keep
// their packets: short headers pass to the kernel with or without the
// program. It fails where a successor's program would drop this process's
// packets (the Bloom-only fast path). Nothing to do without an offload.
func (s *Server) ReleaseOffload() error {
	o := s.h3.offload()
	if o == nil {
		return nil
	}
	return o.Release()
}

// ReacquireOffload starts the offload ReleaseOffload gave up again (the
// successor failed).
func (s *Server) ReacquireOffload() error {
	o := s.h3.offload()
	if o == nil {
		return nil
	}
	return o.Reacquire()
}
