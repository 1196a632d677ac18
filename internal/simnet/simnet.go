// Package simnet is for tests only: an in-memory datagram network whose
// endpoints are net.PacketConns, for deterministic tests under
// testing/synctest.
//
// Every link (one direction between two IP addresses) has a one-way delay,
// a seeded loss, duplication and reordering model, an MTU above which
// datagrams are dropped, and optionally a bandwidth with a bounded queue.
// A datagram written at virtual time T arrives at T plus its link's delay;
// nothing uses real sockets or real time, and every wait is on a channel or
// timer, so inside a synctest bubble synctest.Wait and the virtual clock
// work across the network. A Filter sees each written datagram and may
// drop it or rewrite its source (a NAT); Inject delivers a datagram from
// any address (an attacker); Conn.Rebind moves an endpoint to a new address
// (NAT rebinding) while the old one still reaches it.
//
// The random decisions of a link come from its own generator, seeded from
// the Network's seed and the link's addresses, so one sender's datagrams
// meet the same fate in every run whatever the other links do.
//
// A Network and its Conns must be created inside the bubble that uses them.
package simnet

import (
	"container/heap"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"
)

// LinkConfig is the behaviour of one direction of a link. The zero value
// delivers every datagram at once, in order.
type LinkConfig struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Loss is the probability that a datagram is dropped.
	Loss float64
	// Duplicate is the probability that a datagram arrives twice.
	Duplicate float64
	// Reorder is the probability that a datagram is held back by
	// ReorderDelay, so that later ones overtake it.
	Reorder float64
	// ReorderDelay is the extra delay of a reordered datagram; 0 means
	// Delay, or 1 ms when Delay is 0.
	ReorderDelay time.Duration
	// MTU drops datagrams longer than this many bytes (UDP payload); 0 is
	// no limit.
	MTU int
	// Bandwidth, in bytes per second, serializes datagrams: each leaves
	// when the previous one has been sent. 0 is unlimited.
	Bandwidth int
	// QueueDelay bounds the wait of a datagram for the link under
	// Bandwidth: one that would wait longer is dropped (tail drop). 0 is
	// an unbounded queue.
	QueueDelay time.Duration
}

// Packet is a datagram on the network.
type Packet struct {
	From, To netip.AddrPort
	Data     []byte
}

// Stats counts what happened to the datagrams written to a Network.
type Stats struct {
	Sent       int // datagrams written
	Delivered  int // datagrams queued at an endpoint (duplicates count twice)
	Lost       int // dropped by a link's Loss
	TooBig     int // dropped for exceeding a link's MTU
	QueueDrops int // dropped by a full queue (Bandwidth and QueueDelay)
	Filtered   int // dropped by the Filter
	NoRoute    int // addressed to no endpoint
	Duplicated int
	Reordered  int
}

// Network connects Conns by address.
type Network struct {
	seed uint64

	mu       sync.Mutex
	conns    map[netip.AddrPort]*Conn
	def      LinkConfig
	configs  map[linkKey]LinkConfig
	links    map[linkKey]*link
	filter   func(*Packet) bool
	stats    Stats
	nextPort uint16
	seq      uint64
}

type linkKey struct{ from, to netip.Addr }

// link is the state of one direction between two addresses.
type link struct {
	rng       *rand.Rand
	busyUntil time.Time
}

// New returns a Network whose links behave as def unless SetLink says
// otherwise, with random decisions derived from seed.
func New(seed uint64, def LinkConfig) *Network {
	return &Network{
		seed:     seed,
		conns:    make(map[netip.AddrPort]*Conn),
		def:      def,
		configs:  make(map[linkKey]LinkConfig),
		links:    make(map[linkKey]*link),
		nextPort: 40000,
	}
}

// SetLink sets the behaviour of datagrams from the address from to the
// address to (one direction; ports do not matter).
func (n *Network) SetLink(from, to netip.Addr, cfg LinkConfig) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.configs[linkKey{from, to}] = cfg
}

// SetPath sets the behaviour of both directions between a and b.
func (n *Network) SetPath(a, b netip.Addr, cfg LinkConfig) {
	n.SetLink(a, b, cfg)
	n.SetLink(b, a, cfg)
}

// Link returns the behaviour of datagrams from from to to.
func (n *Network) Link(from, to netip.Addr) LinkConfig {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.linkConfigLocked(linkKey{from, to})
}

func (n *Network) linkConfigLocked(k linkKey) LinkConfig {
	if c, ok := n.configs[k]; ok {
		return c
	}
	return n.def
}

// SetFilter installs f, which sees every datagram written to the network
// before its link does: it may change p.From (a NAT rewriting the source;
// the new address must reach the sender, see Conn.Rebind) or return false
// to drop it. f runs in the writer's goroutine without the network's lock
// held, so it may call the Network's and Conns' methods. nil removes it.
func (n *Network) SetFilter(f func(p *Packet) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.filter = f
}

// Stats returns the network's counters.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Listen returns an endpoint at addr; a zero port picks a free one. It
// fails if the address is taken.
func (n *Network) Listen(addr netip.AddrPort) (*Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr.Port() == 0 {
		for {
			n.nextPort++
			a := netip.AddrPortFrom(addr.Addr(), n.nextPort)
			if _, used := n.conns[a]; !used {
				addr = a
				break
			}
		}
	}
	if _, used := n.conns[addr]; used {
		return nil, &net.OpError{Op: "listen", Net: "udp", Addr: net.UDPAddrFromAddrPort(addr), Err: errors.New("address in use")}
	}
	c := &Conn{n: n, addr: addr, notify: make(chan struct{}, 1), done: make(chan struct{})}
	n.conns[addr] = c
	return c, nil
}

// MustListen is Listen for addresses known to be free; it panics otherwise.
func (n *Network) MustListen(addr string) *Conn {
	c, err := n.Listen(netip.MustParseAddrPort(addr))
	if err != nil {
		panic(err)
	}
	return c
}

// Inject delivers p to p.To after delay, as if p.From had sent it, with no
// link, filter or loss involved.
func (n *Network) Inject(p Packet, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queueLocked(p.To, p.From, slices.Clone(p.Data), time.Now().Add(delay))
}

// send carries a datagram from the endpoint at from through its link.
func (n *Network) send(from netip.AddrPort, to netip.AddrPort, b []byte) {
	p := Packet{From: from, To: to, Data: slices.Clone(b)}
	n.mu.Lock()
	n.stats.Sent++
	f := n.filter
	n.mu.Unlock()
	if f != nil && !f(&p) {
		n.mu.Lock()
		n.stats.Filtered++
		n.mu.Unlock()
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	k := linkKey{p.From.Addr(), p.To.Addr()}
	cfg := n.linkConfigLocked(k)
	l := n.links[k]
	if l == nil {
		l = &link{rng: rand.New(rand.NewPCG(n.seed, linkSeed(k)))}
		n.links[k] = l
	}
	if cfg.MTU > 0 && len(p.Data) > cfg.MTU {
		n.stats.TooBig++
		return
	}
	now := time.Now()
	depart := now
	if cfg.Bandwidth > 0 {
		if l.busyUntil.After(now) {
			depart = l.busyUntil
		}
		if cfg.QueueDelay > 0 && depart.Sub(now) > cfg.QueueDelay {
			n.stats.QueueDrops++
			return
		}
		l.busyUntil = depart.Add(time.Duration(int64(len(p.Data)) * int64(time.Second) / int64(cfg.Bandwidth)))
		depart = l.busyUntil
	}
	// Draw all three numbers every time, so that one decision does not
	// shift the generator for the next datagram's others.
	lost, dup, reorder := l.rng.Float64() < cfg.Loss, l.rng.Float64() < cfg.Duplicate, l.rng.Float64() < cfg.Reorder
	if lost {
		n.stats.Lost++
		return
	}
	at := depart.Add(cfg.Delay)
	if reorder {
		n.stats.Reordered++
		at = at.Add(cfg.reorderDelay())
	}
	n.queueLocked(p.To, p.From, p.Data, at)
	if dup {
		n.stats.Duplicated++
		n.queueLocked(p.To, p.From, p.Data, at)
	}
}

func (c LinkConfig) reorderDelay() time.Duration {
	switch {
	case c.ReorderDelay > 0:
		return c.ReorderDelay
	case c.Delay > 0:
		return c.Delay
	}
	return time.Millisecond
}

// linkSeed derives a link's generator stream from its addresses (FNV-1a),
// the same in every process.
func linkSeed(k linkKey) uint64 {
	h := uint64(14695981039346656037)
	for _, a := range []netip.Addr{k.from, k.to} {
		for _, b := range a.AsSlice() {
			h ^= uint64(b)
			h *= 1099511628211
		}
		h ^= 0xff
		h *= 1099511628211
	}
	return h
}

func (n *Network) queueLocked(to, from netip.AddrPort, data []byte, at time.Time) {
	c := n.conns[to]
	if c == nil {
		n.stats.NoRoute++
		return
	}
	n.seq++
	n.stats.Delivered++
	c.push(&queued{from: from, data: data, at: at, seq: n.seq})
}

// Conn is an endpoint of a Network: a net.PacketConn whose reads wait in
// virtual time.
type Conn struct {
	n *Network

	mu           sync.Mutex
	addr         netip.AddrPort   // the address datagrams leave from
	aliases      []netip.AddrPort // earlier addresses that still reach it
	queue        arrivals
	readDeadline time.Time
	closed       bool
	notify       chan struct{} // wakes a waiting reader
	done         chan struct{} // closed by Close
}

type queued struct {
	from netip.AddrPort
	data []byte
	at   time.Time
	seq  uint64
}

// arrivals is a min-heap by arrival time, then by send order.
type arrivals []*queued

func (a arrivals) Len() int { return len(a) }
func (a arrivals) Less(i, j int) bool {
	if !a[i].at.Equal(a[j].at) {
		return a[i].at.Before(a[j].at)
	}
	return a[i].seq < a[j].seq
}
func (a arrivals) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)   { *a = append(*a, x.(*queued)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*a = old[:len(old)-1]
	return x
}

func (c *Conn) push(q *queued) {
	c.mu.Lock()
	if !c.closed {
		heap.Push(&c.queue, q)
	}
	c.mu.Unlock()
	c.wake()
}

func (c *Conn) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// ReadFrom returns the next datagram that has arrived, waiting for one
// until the read deadline.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return 0, nil, c.opError("read", net.ErrClosed)
		}
		now := time.Now()
		if !c.readDeadline.IsZero() && !now.Before(c.readDeadline) {
			c.mu.Unlock()
			return 0, nil, c.opError("read", os.ErrDeadlineExceeded)
		}
		wait := time.Duration(-1)
		if len(c.queue) > 0 {
			if q := c.queue[0]; !q.at.After(now) {
				heap.Pop(&c.queue)
				c.mu.Unlock()
				return copy(b, q.data), net.UDPAddrFromAddrPort(q.from), nil
			}
			wait = c.queue[0].at.Sub(now)
		}
		if !c.readDeadline.IsZero() {
			if d := c.readDeadline.Sub(now); wait < 0 || d < wait {
				wait = d
			}
		}
		c.mu.Unlock()
		if wait < 0 {
			select {
			case <-c.notify:
			case <-c.done:
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-c.notify:
		case <-c.done:
		case <-t.C:
		}
		t.Stop()
	}
}

// WriteTo sends b to addr, a *net.UDPAddr; like UDP, it never blocks and
// succeeds for unreachable addresses.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	closed, from := c.closed, c.addr
	c.mu.Unlock()
	if closed {
		return 0, c.opError("write", net.ErrClosed)
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, c.opError("write", errors.New("simnet: not a *net.UDPAddr"))
	}
	ap := ua.AddrPort()
	c.n.send(from, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), b)
	return len(b), nil
}

// Rebind moves the endpoint to addr: later datagrams leave from it, and
// datagrams to it or to any earlier address reach this Conn, as with a NAT
// that gave the client a new port but keeps the old mappings. Rebinding to
// an earlier address of the same Conn is allowed.
func (c *Conn) Rebind(addr netip.AddrPort) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if other, used := c.n.conns[addr]; used && other != c {
		return errors.New("simnet: address in use")
	}
	c.n.conns[addr] = c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.aliases, c.addr) {
		c.aliases = append(c.aliases, c.addr)
	}
	c.addr = addr
	return nil
}

// Close closes the endpoint and frees its addresses.
func (c *Conn) Close() error {
	c.n.mu.Lock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.n.mu.Unlock()
		return nil
	}
	c.closed = true
	c.queue = nil
	for _, a := range append(c.aliases, c.addr) {
		if c.n.conns[a] == c {
			delete(c.n.conns, a)
		}
	}
	close(c.done)
	c.mu.Unlock()
	c.n.mu.Unlock()
	return nil
}

// LocalAddr returns the current address, a *net.UDPAddr.
func (c *Conn) LocalAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return net.UDPAddrFromAddrPort(c.addr)
}

// AddrPort returns the current address.
func (c *Conn) AddrPort() netip.AddrPort {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// SetDeadline sets the read deadline; writes never block.
func (c *Conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline makes waiting reads return a timeout error at t.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = t
	c.mu.Unlock()
	c.wake()
	return nil
}

// SetWriteDeadline does nothing: writes never block.
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Addr: c.LocalAddr(), Err: err}
}
