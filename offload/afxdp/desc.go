package afxdp

// Desc describes one packet in the UMEM, with the layout of the kernel's
// struct xdp_desc so RX and TX ring entries are copied as whole values.
type Desc struct {
	// Addr is the UMEM offset of the packet's first byte.
	Addr uint64
	// Len is the packet length in bytes.
	Len uint32
	// Options carries XDP_PKT_CONTD and TX metadata flags; zero here.
	Options uint32
}
