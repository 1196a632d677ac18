package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
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

// ReplySink is an XDP program on the generator's veth that counts what
// the defender sends back to the spoofed sources (UDP from its port to the
// spoof prefix), Retries apart from the rest, and drops it; everything
// else passes. Its counts tell how much of a flood the defender answered.
type ReplySink struct {
	objs struct {
		Prog     *ebpf.Program `ebpf:"tr_reply_sink"`
		Cfg      *ebpf.Map     `ebpf:"tr_sink_cfg"`
		Counters *ebpf.Map     `ebpf:"tr_sink_counters"`
	}
	link link.Link
}

// AttachReplySink attaches a ReplySink for replies from port to prefix to
// ifname in the calling thread's namespace, in driver mode (which also
// gives a veth its NAPI instance).
func AttachReplySink(ifname string, prefix netip.Prefix, port uint16) (*ReplySink, error) {
	if !prefix.Addr().Is4() || port == 0 {
		return nil, fmt.Errorf("%w: reply sink for %v port %d", ErrConfig, prefix, port)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("live: lifting the memlock limit: %w", err)
	}
	spec, err := loadLive()
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	s := &ReplySink{}
	if err := spec.LoadAndAssign(&s.objs, nil); err != nil {
		return nil, fmt.Errorf("live: loading the reply sink: %w", err)
	}
	p := prefix.Masked()
	a := p.Addr().As4()
	c := liveTrSinkConfig{DstBase: binary.BigEndian.Uint32(a[:]), DstMask: uint32(1)<<(32-p.Bits()) - 1, Port: uint32(port)}
	if p.Bits() == 0 {
		c.DstMask = ^uint32(0)
	}
	if err := s.objs.Cfg.Update(uint32(0), &c, ebpf.UpdateAny); err != nil {
		s.closeObjs()
		return nil, fmt.Errorf("live: configuring the reply sink: %w", err)
	}
	s.link, err = link.AttachXDP(link.XDPOptions{Program: s.objs.Prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
	if err != nil {
		s.closeObjs()
		return nil, fmt.Errorf("live: attaching the reply sink to %s: %w", ifname, err)
	}
	return s, nil
}

// Counts returns the Retries and the other replies counted so far.
func (s *ReplySink) Counts() (retries, other uint64, err error) {
	var per []uint64
	for i, dst := range []*uint64{&retries, &other} {
		if err := s.objs.Counters.Lookup(uint32(i), &per); err != nil {
			return 0, 0, fmt.Errorf("live: reading the reply sink: %w", err)
		}
		for _, v := range per {
			*dst += v
		}
	}
	return retries, other, nil
}

// Close detaches and unloads the sink.
func (s *ReplySink) Close() error {
	err := s.link.Close()
	return errors.Join(err, s.closeObjs())
}

func (s *ReplySink) closeObjs() error {
	return errors.Join(s.objs.Prog.Close(), s.objs.Cfg.Close(), s.objs.Counters.Close())
}
