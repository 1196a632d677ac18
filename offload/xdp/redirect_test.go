//go:build linux

package xdp

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// newXSK returns an AF_XDP socket with a UMEM and RX and fill rings, the
// least the kernel wants before it takes the socket into an XSKMAP. It is
// not bound to a device: the test run only looks it up.
func newXSK(tb testing.TB) int {
	tb.Helper()
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		tb.Skip("skipping: kernel without AF_XDP")
	}
	if err != nil {
		tb.Fatalf("AF_XDP socket: %v", err)
	}
	tb.Cleanup(func() { _ = unix.Close(fd) })
	const frames, frameSize = 16, 4096
	umem, err := unix.Mmap(-1, 0, frames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = unix.Munmap(umem) })
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&umem[0]))), Len: uint64(len(umem)), Size: frameSize}
	if _, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0); errno != 0 {
		tb.Fatalf("XDP_UMEM_REG: %v", errno)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_RX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt, frames); err != nil {
			tb.Fatalf("ring option %d: %v", opt, err)
		}
	}
	return fd
}

// TestInitialRedirectWithSocket: with a socket in the queue's slot the
// program redirects. BPF_PROG_TEST_RUN (without live frames) only reports
// the action: it returns XDP_REDIRECT and delivers nothing to the socket.
func TestInitialRedirectWithSocket(t *testing.T) {
	p := loadFiltering(t)
	fd := newXSK(t)
	if err := p.XSKMap().Update(uint32(0), uint32(fd), ebpf.UpdateAny); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, os.ErrPermission) {
			t.Skipf("skipping: kernel does not take an unbound AF_XDP socket into the XSKMAP: %v", err)
		}
		t.Fatalf("XSKMAP update: %v", err)
	}
	dcid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	expect(t, p, udp4(testPort, longPacket(typeInitial, 1, dcid, 1200)), xdpRedirect, AgentInitial)
	expect(t, p, udp6(testPort, longPacket(typeInitial, 0xff00001d, dcid, 1200)), xdpRedirect, AgentVersion)
	// Only the agent's packets are redirected.
	expect(t, p, udp4(testPort, shortPacket(dcid)), xdpDrop, DropMiss)
	// Fail-open wins over the socket.
	if err := p.Beat(0); err != nil {
		t.Fatal(err)
	}
	expect(t, p, udp4(testPort, longPacket(typeInitial, 1, dcid, 1200)), xdpPass, PassFailOpen)
}
