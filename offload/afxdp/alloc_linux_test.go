//go:build linux

package afxdp

import (
	"github.com/turboretry/turboretry/offload/frame"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSteadyStateAllocs runs the datapath loop (A sends one datagram,
// AF_XDP receives and releases it, then builds and transmits one frame that A
// reads) under testing.AllocsPerRun: Receive, Release, AllocFrame,
// Transmit, Complete and WaitTimeout must not allocate.
func TestSteadyStateAllocs(t *testing.T) {
	e := newXSKEnv(t, smallConfig)
	var fdA int
	e.in(t, e.nsA, func() {
		fdA = udpSocket(t, netip.AddrPortFrom(ipA, portA), netip.AddrPortFrom(ipB, portB))
	})
	out := []byte("steady state datagram")
	in := make([]byte, 2048)
	batch := make([]Desc, 16)
	tx := make([]Desc, 1)
	reply := frame.UDP{Dst: macA, Src: macB, SrcIP: ipB, DstIP: ipA, SrcPort: portB, DstPort: portA, Payload: []byte("reply")}
	var failure string // set inside the loop, reported after it
	rounds := 0
	step := func() {
		if failure != "" {
			return
		}
		if _, err := unix.Write(fdA, out); err != nil {
			failure = "send: " + err.Error()
			return
		}
		got := 0
		for got == 0 {
			n := e.xsk.Receive(batch)
			for _, d := range batch[:n] {
				f, err := frame.Parse(e.xsk.Frame(d))
				if err == nil && f.DstPort == portB && string(f.Payload) == string(out) {
					got++
				}
			}
			e.xsk.Release(batch[:n])
			if n == 0 {
				if r, err := e.xsk.WaitTimeout(waitLimit, Readable); err != nil || r == 0 {
					failure = "nothing received"
					return
				}
			}
		}
		d, ok := e.xsk.AllocFrame()
		if !ok {
			failure = "no free frame"
			return
		}
		buf := e.xsk.Frame(d)
		n, err := reply.Encode(buf[:cap(buf)])
		if err != nil {
			failure = err.Error()
			return
		}
		d.Len = uint32(n)
		tx[0] = d
		if k, err := e.xsk.Transmit(tx); k != 1 || err != nil {
			failure = "transmit failed"
			return
		}
		if k, err := readUDP(fdA, in); err != nil || string(in[:k]) != "reply" {
			failure = "reply not read in A"
			return
		}
		e.xsk.Complete()
		rounds++
	}
	for range 50 { // warm up: fill and completion rings in steady use
		step()
	}
	allocs := testing.AllocsPerRun(300, step)
	if failure != "" {
		t.Fatalf("after %d rounds: %s", rounds, failure)
	}
	if allocs != 0 {
		t.Fatalf("steady state allocates %v times per packet", allocs)
	}
	if rounds != 351 {
		t.Fatalf("%d rounds ran, want 351", rounds)
	}
}
