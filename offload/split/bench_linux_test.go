package split

import (
	"net/netip"
	"testing"

	"github.com/turboretry/turboretry/internal/netnstest"
)

// BenchmarkHostPortForward measures handing one validated Initial frame
// (1242 bytes) to the host port: the lock, a UMEM copy and an AF_XDP
// transmit (copy mode on veth, so the kernel sends inside the call).
func BenchmarkHostPortForward(b *testing.B) {
	netnstest.RequireRoot(b, "the host port benchmark (network namespaces, AF_XDP)")
	netnstest.RequireAFXDP(b)
	ns := netnstest.New(b, "trsp-b")
	netnstest.Veth(b, netnstest.End{NS: ns, Dev: hostIf}, netnstest.End{NS: ns, Dev: "h0"})
	netnstest.Up(b, ns, hostIf, netip.Prefix{})
	netnstest.Up(b, ns, "h0", netip.Prefix{})
	netnstest.WaitUp(b, ns, hostIf)
	var h *hostPort
	in(b, ns, func() error {
		var err error
		h, err = openHostPort(hostIf)
		return err
	})
	defer h.close()
	frame := make([]byte, 1242)
	copy(frame, []byte{0x02, 0, 0x5e, 0, 2, 2, 0x02, 0, 0x5e, 0, 2, 1, 0x08, 0x00})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		h.forward(frame)
	}
	if h.failed.Load() > h.sent.Load()/100 {
		b.Errorf("%d of %d frames failed", h.failed.Load(), h.failed.Load()+h.sent.Load())
	}
}
