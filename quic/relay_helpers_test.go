package quic

import (
	"net"
	"sync/atomic"
	"testing"
)

// filterRelay relays datagrams between one client and a server. filter
// sees every datagram (fromClient says which way it goes) and decides
// whether it passes; a reply, when not nil, goes back to the sender.
type filterRelay struct {
	down, up *net.UDPConn
}

func newFilterRelay(t *testing.T, server net.Addr, filter func(fromClient bool, d []byte) (pass bool, reply []byte)) *filterRelay {
	r := &filterRelay{down: listenUDP(t), up: listenUDP(t)}
	var client atomic.Pointer[net.Addr]
	go func() {
		b := make([]byte, 2048)
		for {
			n, from, err := r.down.ReadFrom(b)
			if err != nil {
				return
			}
			client.Store(&from)
			pass, reply := filter(true, b[:n])
			if reply != nil {
				_, _ = r.down.WriteTo(reply, from)
			}
			if pass {
				_, _ = r.up.WriteTo(b[:n], server)
			}
		}
	}()
	go func() {
		b := make([]byte, 2048)
		for {
			n, _, err := r.up.ReadFrom(b)
			if err != nil {
				return
			}
			pass, _ := filter(false, b[:n])
			if c := client.Load(); c != nil && pass {
				_, _ = r.down.WriteTo(b[:n], *c)
			}
		}
	}()
	return r
}
