package fileserver

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
)

// A UDP socket on the port's number fails New at once, before anything
// is announced, instead of Serve failing after "Serving" is printed.
func TestNewRefusesPortWhoseUDPIsTaken(t *testing.T) {
	// The TCP port of the UDP socket's number may be taken too, by a
	// connection of another test binary: then New fails on TCP, which says
	// nothing of the UDP check, and another number is tried.
	for try := 1; ; try++ {
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Addr: udp.LocalAddr().String(), StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		udp.Close()
		if err == nil {
			s.Close()
			t.Fatal("New took a port whose UDP number another socket holds")
		}
		if try < 10 && errors.Is(err, syscall.EADDRINUSE) && strings.HasPrefix(err.Error(), "listening on ") {
			t.Logf("the TCP port of the number is taken too: %v", err)
			continue
		}
		if !strings.Contains(err.Error(), "UDP port") || !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("error %q does not name the UDP port in use", err)
		}
		return
	}
}

// With a kernel-chosen port, a port whose UDP number is taken is given
// back and another one tried, a bounded number of times.
func TestKernelChosenPortSkipsTakenUDP(t *testing.T) {
	c := &Config{Addr: "127.0.0.1:0"}
	var tried []int
	busyFirst := func(n int) func(*net.TCPAddr) error {
		return func(a *net.TCPAddr) error {
			tried = append(tried, a.Port)
			if len(tried) <= n {
				return &net.OpError{Op: "listen", Net: "udp", Err: syscall.EADDRINUSE}
			}
			return nil
		}
	}
	ln, err := c.listenTCPWithUDPFree(busyFirst(3))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if len(tried) != 4 || tried[3] != ln.Addr().(*net.TCPAddr).Port {
		t.Errorf("tried ports %v, listening on %v: want 4 tries ending on the listener's port", tried, ln.Addr())
	}

	tried = nil
	if ln, err := c.listenTCPWithUDPFree(busyFirst(udpPortTries)); err == nil {
		ln.Close()
		t.Errorf("no error after %d taken ports", udpPortTries)
	} else if len(tried) != udpPortTries {
		t.Errorf("%d tries, want %d", len(tried), udpPortTries)
	}

	// Another error is not retried.
	tried = nil
	perm := func(*net.TCPAddr) error { tried = append(tried, 0); return syscall.EACCES }
	if ln, err := c.listenTCPWithUDPFree(perm); err == nil || !errors.Is(err, syscall.EACCES) || len(tried) != 1 {
		if ln != nil {
			ln.Close()
		}
		t.Errorf("EACCES: err %v after %d tries, want it after 1", err, len(tried))
	}
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1:", ":0", "[::1]:0"} {
		if !(&Config{Addr: addr}).kernelChoosesPort() {
			t.Errorf("%q: the kernel chooses the port", addr)
		}
	}
	if (&Config{Addr: "127.0.0.1:8443"}).kernelChoosesPort() {
		t.Error("127.0.0.1:8443 has its port")
	}
}
