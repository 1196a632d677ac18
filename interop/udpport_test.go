package interop

import (
	"bufio"
	"context"
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

// udpBoundPollInterval is how often waitUDPBound rereads the socket table:
// the kernel offers no notification for another process binding a port.
const udpBoundPollInterval = 20 * time.Millisecond

// waitUDPBound waits until some socket is bound to 127.0.0.1:port (or any
// address with that port), until exited is closed (the peer died), or
// until ctx ends. It reads /proc/net/udp, so it works on Linux only, which
// is where the peers are packaged.
func waitUDPBound(ctx context.Context, port int, exited <-chan struct{}) error {
	tick := time.NewTicker(udpBoundPollInterval)
	defer tick.Stop()
	for {
		bound, err := udpPortBound(port)
		if err != nil {
			return err
		}
		if bound {
			return nil
		}
		select {
		case <-tick.C:
		case <-exited:
			return fmt.Errorf("the peer exited before binding UDP port %d", port)
		case <-ctx.Done():
			return fmt.Errorf("waiting for UDP port %d to be bound: %w", port, ctx.Err())
		}
	}
}

// udpPortBound reports whether /proc/net/udp lists a socket on port with
// a local address of 127.0.0.1 or 0.0.0.0.
func udpPortBound(port int) (bool, error) {
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		return false, fmt.Errorf("cannot tell whether the peer is listening: %w", err)
	}
	defer f.Close()
	want := []string{fmt.Sprintf("0100007F:%04X", port), fmt.Sprintf("00000000:%04X", port)}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		for _, w := range want {
			if fields[1] == w {
				return true, nil
			}
		}
	}
	return false, sc.Err()
}
