package reuseport

import "net"

// Stats counts the program's decisions, summed over CPUs (zero in the
// fallback modes, where no program runs).
type Stats struct {
	// Steered datagrams went to the worker in their server ID.
	Steered uint64
	// Hashed datagrams carried a client-chosen long-header DCID and went
	// to its hash.
	Hashed uint64
	// Undecodable short headers (no server ID), Truncated datagrams (too
	// short for a QUIC header) and NoSocket ones (no socket at the chosen
	// index) got the kernel's default choice.
	Undecodable, Truncated, NoSocket uint64
}

// Fallback returns the datagrams left to the kernel's default choice.
func (s Stats) Fallback() uint64 { return s.Undecodable + s.Truncated + s.NoSocket }

// Conns returns the sockets, worker i's at index i.
func (g *Group) Conns() []*net.UDPConn { return g.conns }

// Workers returns the number of sockets.
func (g *Group) Workers() int { return len(g.conns) }

// Mode returns how datagrams are spread.
func (g *Group) Mode() Mode { return g.mode }

// Reason says why the group runs in a fallback mode (nil when steered).
func (g *Group) Reason() error { return g.reason }

// LocalAddr returns the address the sockets share.
func (g *Group) LocalAddr() net.Addr { return g.conns[0].LocalAddr() }

// WorkerFor returns the worker whose socket the program picks for a UDP
// payload, for datagrams that arrive another way (an offload agent
// injecting validated Initials, which are long headers: always steered or
// hashed). Payloads the program leaves to the kernel, or steers to the
// other generation's process, go to worker 0.
func (g *Group) WorkerFor(payload []byte) int {
	if len(g.conns) == 1 {
		return 0
	}
	if w, _ := g.steer.pick(payload); w >= 0 && w>>7 == g.generation {
		return w & 0x7f
	}
	return 0
}

// Generation returns the generation of the group's sockets and of the IDs
// its workers issue: 0 for a group Listen opened, the other one for a
// group Join opened.
func (g *Group) Generation() int { return g.generation }
