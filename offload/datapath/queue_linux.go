package datapath

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/offload/afxdp"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/frame"
)

// DefaultSocket sizes a queue's socket when Config.Socket is zero: 8192
// receive descriptors and as many frames in the fill ring (16384 frames of
// 2 KiB in the UMEM, 32 MiB per queue; a 1242-byte Initial fits a 2 KiB
// frame with the kernel's headroom). afxdp's defaults (2048 descriptors)
// absorb about 5 ms of flood at 400 kpps, and a queue goroutine that lost
// its CPU for longer dropped Initials at rates its core sustains
// (BenchmarkDatapathSaturation: 96 % answered at 400 kpps, 99.5 % with
// these rings; docs/evaluation.md).
var DefaultSocket = afxdp.Config{FrameSize: 2048, NumFrames: 16384, RXRingSize: 8192, FillRingSize: 8192}

// batchSize is how many frames a worker takes from its RX ring at once.
const batchSize = 64

// idlePoll bounds an idle worker's poll(2), so it notices Close. A
// context-bound Wait would allocate per wake-up, which at low packet rates
// is per packet.
const idlePoll = 50 * time.Millisecond

// queue is one receive queue: its socket, its agent worker and the
// buffers of its loop. Only its goroutine touches anything but the
// counters.
type queue struct {
	sock    *afxdp.Socket
	worker  *agent.Worker
	deliver DeliverFunc // exactly one of deliver and forward is set
	forward ForwardFunc

	rx, release, tx []afxdp.Desc
	scratch         []byte // the agent's reply buffer (must not alias the frame)

	counters queueCounters
}

// queueCounters are published per batch, read by Stats from any goroutine.
type queueCounters struct {
	framesRX    atomic.Uint64
	framesTX    atomic.Uint64
	delivered   atomic.Uint64
	forwarded   atomic.Uint64
	unparsed    atomic.Uint64
	replyFailed atomic.Uint64
}

func newQueue(s *afxdp.Socket, w *agent.Worker, deliver DeliverFunc, forward ForwardFunc) *queue {
	return &queue{
		sock:    s,
		worker:  w,
		deliver: deliver,
		forward: forward,
		rx:      make([]afxdp.Desc, batchSize),
		release: make([]afxdp.Desc, 0, batchSize),
		tx:      make([]afxdp.Desc, 0, batchSize),
		scratch: make([]byte, 0, agent.MaxReplyLen),
	}
}

// run serves the queue until ctx ends (nil) or the socket fails.
func (q *queue) run(ctx context.Context) error {
	for {
		n := q.sock.Receive(q.rx)
		if n > 0 {
			q.handle(ctx, q.rx[:n])
			continue
		}
		// Idle: publish the agent's counters, then sleep until frames come.
		q.worker.Flush()
		q.sock.Complete()
		wait := idlePoll
		if q.sock.Pending() > 0 {
			// Transmissions outstanding: poll briefly so Complete
			// reclaims their frames, which reception may need.
			wait = time.Millisecond
		}
		_, err := q.sock.WaitTimeout(wait, afxdp.Readable)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// handle runs one batch of received frames through the agent.
func (q *queue) handle(ctx context.Context, descs []afxdp.Desc) {
	release, tx := q.release[:0], q.tx[:0]
	var delivered, forwarded, unparsed, failed uint64
	now := time.Now() // one clock read per batch, not per packet
	for _, d := range descs {
		buf := q.sock.Frame(d)
		f, err := frame.ParseLax(buf)
		if err == nil {
			err = checkRequest(&f)
		}
		if err != nil {
			unparsed++
			release = append(release, d)
			continue
		}
		from := netip.AddrPortFrom(f.SrcIP, f.SrcPort)
		v, _, reply := q.worker.ProcessAt(f.Payload, from, q.scratch, now)
		switch v {
		case agent.SendReply:
			n, err := encodeReply(buf, &f, reply)
			if err != nil {
				failed++
				release = append(release, d)
				continue
			}
			d.Len = uint32(n)
			tx = append(tx, d)
		case agent.Forward:
			if q.forward != nil {
				// Parsing does not modify the frame: it goes on as received.
				q.forward(buf)
				forwarded++
			} else {
				q.deliver(f.Payload, from, netip.AddrPortFrom(f.DstIP, f.DstPort))
				delivered++
			}
			release = append(release, d)
		default:
			release = append(release, d)
		}
	}
	if len(release) > 0 {
		q.sock.Release(release)
	}
	sent := q.transmit(ctx, tx)
	failed += uint64(len(tx) - sent)

	q.counters.framesRX.Add(uint64(len(descs)))
	q.counters.framesTX.Add(uint64(sent))
	if delivered > 0 {
		q.counters.delivered.Add(delivered)
	}
	if forwarded > 0 {
		q.counters.forwarded.Add(forwarded)
	}
	if unparsed > 0 {
		q.counters.unparsed.Add(unparsed)
	}
	if failed > 0 {
		q.counters.replyFailed.Add(failed)
	}
}

// transmit queues tx, waiting for ring space while it is full, and returns
// how many frames went out; the others are freed (a reply lost is a client
// retransmission, not a leak).
func (q *queue) transmit(ctx context.Context, tx []afxdp.Desc) int {
	sent := 0
	// A ring that stays full for a second means a stuck device: give up
	// on the batch rather than on the queue.
	for try := 0; sent < len(tx) && try < 100; try++ {
		n, err := q.sock.Transmit(tx[sent:])
		sent += n
		if err != nil || sent == len(tx) || ctx.Err() != nil {
			break
		}
		if _, err := q.sock.WaitTimeout(10*time.Millisecond, afxdp.Writable); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			break
		}
	}
	for _, d := range tx[sent:] {
		q.sock.FreeFrame(d)
	}
	return sent
}
