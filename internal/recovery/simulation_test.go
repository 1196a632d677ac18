package recovery

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// simEvent is a datagram arriving at one end of the simulated link.
type simEvent struct {
	at     time.Time
	seq    int // keeps simultaneous arrivals in sending order
	toPeer bool
	pn     uint64
	ranges []wire.AckRange
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simulation is a sender delivering chunks over a link with a fixed delay
// and random loss in both directions, and a receiver that acknowledges
// every packet with up to 32 ranges.
type simulation struct {
	t        *testing.T
	r        *Recovery
	rand     *rand.Rand
	oneWay   time.Duration
	lossRate float64
	queue    simQueue
	seq      int

	chunks     int
	nextChunk  int
	retransmit []int
	acked      []bool
	ackedCount int
	nextPN     uint64

	received    []bool
	largestRecv uint64

	sent, lost, probes int
}

func (s *simulation) schedule(e simEvent) {
	if s.rand.Float64() < s.lossRate {
		return
	}
	s.seq++
	e.seq = s.seq
	heap.Push(&s.queue, e)
}

func (s *simulation) sendChunk(now time.Time, chunk int) {
	if s.nextPN%97 == 96 {
		s.nextPN++ // skip a number now and then, as a real sender does
	}
	pn := s.nextPN
	s.nextPN++
	p := SentPacket{Number: pn, TimeSent: now, Size: 1200, AckEliciting: true, InFlight: true, Handle: uint64(chunk)}
	if err := s.r.OnPacketSent(protocol.SpaceAppData, p); err != nil {
		s.t.Fatalf("OnPacketSent: %v", err)
	}
	s.sent++
	s.schedule(simEvent{at: now.Add(s.oneWay), toPeer: true, pn: pn})
}

// nextData picks the chunk to send: lost ones first, then new ones.
func (s *simulation) nextData() (int, bool) {
	for len(s.retransmit) > 0 {
		c := s.retransmit[0]
		s.retransmit = s.retransmit[1:]
		if !s.acked[c] {
			return c, true
		}
	}
	if s.nextChunk < s.chunks {
		s.nextChunk++
		return s.nextChunk - 1, true
	}
	return 0, false
}

// probeData is what a PTO sends: data if any, else an unacked chunk again.
func (s *simulation) probeData() int {
	if c, ok := s.nextData(); ok {
		return c
	}
	for c, done := range s.acked {
		if !done {
			return c
		}
	}
	return 0
}

func (s *simulation) handle(ev *Events) {
	for _, p := range ev.Acked {
		if c := int(p.Handle); !s.acked[c] {
			s.acked[c] = true
			s.ackedCount++
		}
	}
	for _, p := range ev.Lost {
		s.lost++
		if c := int(p.Handle); !s.acked[c] {
			s.retransmit = append(s.retransmit, c)
		}
	}
}

func (s *simulation) fill(now time.Time) {
	for s.r.CanSend() {
		c, ok := s.nextData()
		if !ok {
			return
		}
		s.sendChunk(now, c)
	}
}

func (s *simulation) receive(now time.Time, pn uint64) {
	for uint64(len(s.received)) <= pn {
		s.received = append(s.received, false)
	}
	s.received[pn] = true
	s.largestRecv = max(s.largestRecv, pn)
	var ranges []wire.AckRange
	for i := int64(s.largestRecv); i >= 0 && len(ranges) < 32; {
		if !s.received[i] {
			i--
			continue
		}
		hi := uint64(i)
		for i >= 0 && s.received[i] {
			i--
		}
		ranges = append(ranges, wire.AckRange{Smallest: uint64(i + 1), Largest: hi})
	}
	s.schedule(simEvent{at: now.Add(s.oneWay), ranges: ranges})
}

func runSimulation(t *testing.T, newCC func(congestion.RTTSource, int) congestion.Controller) {
	const chunks = 3000
	start := t0
	s := &simulation{
		t:        t,
		r:        New(Config{IsServer: true, NewController: newCC}),
		rand:     rand.New(rand.NewPCG(1, 2)),
		oneWay:   25 * time.Millisecond,
		lossRate: 0.05,
		chunks:   chunks,
		acked:    make([]bool, chunks),
	}
	s.r.SetHandshakeConfirmed(start)
	minWindow := congestion.MinimumWindow(1200)
	now := start
	var ev Events
	s.fill(now)
	for step := 0; s.ackedCount < chunks; step++ {
		if step > 1_000_000 {
			t.Fatalf("no convergence: %d/%d acked after %d steps", s.ackedCount, chunks, step)
		}
		timer := s.r.LossDetectionTimeout()
		ev.Reset()
		switch {
		case len(s.queue) > 0 && (timer.IsZero() || !timer.Before(s.queue[0].at)):
			e := heap.Pop(&s.queue).(simEvent)
			if e.at.Before(now) {
				t.Fatal("time went backwards")
			}
			now = e.at
			if e.toPeer {
				s.receive(now, e.pn)
				continue
			}
			if err := s.r.OnAckReceived(protocol.SpaceAppData, e.ranges, 0, now, &ev); err != nil {
				t.Fatalf("OnAckReceived: %v", err)
			}
			s.handle(&ev)
		case !timer.IsZero():
			if timer.Before(now) {
				t.Fatal("timer in the past")
			}
			now = timer
			a := s.r.OnLossDetectionTimeout(now, &ev)
			s.handle(&ev)
			if a.Kind == TimeoutProbe {
				for range a.Probes {
					s.probes++
					s.sendChunk(now, s.probeData())
				}
			}
		default:
			t.Fatalf("deadlock: nothing in the air, no timer, %d/%d acked", s.ackedCount, chunks)
		}
		if cwnd := s.r.Controller().CongestionWindow(); cwnd < minWindow {
			t.Fatalf("cwnd %d below the minimum", cwnd)
		}
		if s.r.BytesInFlight() < 0 {
			t.Fatalf("bytes in flight %d", s.r.BytesInFlight())
		}
		s.fill(now)
	}
	elapsed := now.Sub(start)
	t.Logf("%d chunks in %v simulated: %d packets sent, %d declared lost, %d probes, final cwnd %d, srtt %v",
		chunks, elapsed, s.sent, s.lost, s.probes, s.r.Controller().CongestionWindow(), s.r.RTT().SmoothedRTT())
	if s.lost == 0 {
		t.Fatal("5% loss but nothing declared lost")
	}
	if srtt := s.r.RTT().SmoothedRTT(); srtt < 50*time.Millisecond || srtt > 60*time.Millisecond {
		t.Fatalf("smoothed RTT %v on a 50 ms link", srtt)
	}
	// Spurious retransmissions stay modest: a loss detector gone wrong
	// resends far more than the 5% (plus the lost ACKs' share) it must.
	if s.sent > chunks*13/10 {
		t.Fatalf("%d packets sent for %d chunks", s.sent, chunks)
	}
}

func TestSimulationNewReno(t *testing.T) {
	runSimulation(t, nil)
}

func TestSimulationCubic(t *testing.T) {
	runSimulation(t, func(rtt congestion.RTTSource, mds int) congestion.Controller {
		return congestion.NewCubic(rtt, mds)
	})
}
