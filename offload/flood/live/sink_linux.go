package live

import (
	"fmt"
	"io"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// AttachDropSink attaches an XDP program that drops every frame to ifname
// in the calling thread's namespace, in driver mode: the cheapest receiver
// a veth can have, for measuring the generator alone. Close detaches it.
func AttachDropSink(ifname string) (io.Closer, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	const xdpDrop = 1
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "tr_drop_sink",
		Type:         ebpf.XDP,
		License:      "Dual MIT/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()},
	})
	if err != nil {
		return nil, fmt.Errorf("live: loading the drop sink: %w", err)
	}
	defer prog.Close() // the link holds its own reference
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
	if err != nil {
		return nil, fmt.Errorf("live: attaching the drop sink to %s: %w", ifname, err)
	}
	return l, nil
}
