package interop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// freeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago,
// for a peer that needs its port on the command line.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// peerPortTries bounds how often startPeerOnFreePort starts a peer again
// on another port.
const peerPortTries = 5

// startPeerOnFreePort starts bin with args(port) on a port from
// freeUDPPort and waits until the peer itself has bound it. That port was
// free only when it was probed: another test binary running beside this
// one may bind it first, and then the peer cannot (gtlsserver prints
// "Could not bind" and exits) and is started again on another port.
func startPeerOnFreePort(ctx context.Context, t *testing.T, bin string, args func(port int) []string) (*peer, int) {
	t.Helper()
	for try := 1; ; try++ {
		port := freeUDPPort(t)
		p := startPeer(ctx, t, bin, args(port)...)
		err := waitUDPBound(ctx, p, port)
		if err == nil {
			return p, port
		}
		if errors.Is(err, errPeerExited) && strings.Contains(p.output(t), "Could not bind") && try < peerPortTries {
			t.Logf("port %d was taken before %s bound it; another port", port, p.name)
			continue
		}
		p.logTail(t, 20)
		t.Fatal(err)
	}
}

// udpBoundPollInterval is how often waitUDPBound rereads the socket table:
// the kernel offers no notification for another process binding a port.
const udpBoundPollInterval = 20 * time.Millisecond

// errPeerExited is waitUDPBound's error when the peer exited first.
var errPeerExited = errors.New("the peer exited before binding its UDP port")

// waitUDPBound waits until peer p holds a socket bound to 127.0.0.1:port
// (or any address with that port), until p exits, or until ctx ends. A
// socket of another process on that port does not count. It reads
// /proc, so it works on Linux only, which is where the peers are packaged.
func waitUDPBound(ctx context.Context, p *peer, port int) error {
	tick := time.NewTicker(udpBoundPollInterval)
	defer tick.Stop()
	for {
		bound, err := udpPortBoundBy(p.cmd.Process.Pid, port)
		if err != nil {
			return err
		}
		if bound {
			return nil
		}
		select {
		case <-tick.C:
		case <-p.exited:
			return fmt.Errorf("%w (port %d)", errPeerExited, port)
		case <-ctx.Done():
			return fmt.Errorf("waiting for UDP port %d to be bound: %w", port, ctx.Err())
		}
	}
}

// udpPortBoundBy reports whether process pid holds a socket that
// /proc/net/udp lists on port with a local address of 127.0.0.1 or
// 0.0.0.0.
func udpPortBoundBy(pid, port int) (bool, error) {
	inodes, err := udpPortInodes(port)
	if err != nil || len(inodes) == 0 {
		return false, err
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, nil // the peer is gone: its exit is seen by the caller
	}
	for _, fd := range fds {
		if link, err := os.Readlink(dir + "/" + fd.Name()); err == nil && inodes[link] {
			return true, nil
		}
	}
	return false, nil
}

// udpPortInodes returns the sockets that /proc/net/udp lists on port with
// a local address of 127.0.0.1 or 0.0.0.0, as the "socket:[inode]" their
// file descriptors link to.
func udpPortInodes(port int) (map[string]bool, error) {
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		return nil, fmt.Errorf("cannot tell whether the peer is listening: %w", err)
	}
	defer f.Close()
	want := []string{fmt.Sprintf("0100007F:%04X", port), fmt.Sprintf("00000000:%04X", port)}
	inodes := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		for _, w := range want {
			if fields[1] == w {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
	}
	return inodes, sc.Err()
}
