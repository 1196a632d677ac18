package streambuf

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestModelSendRecv runs a sender and a receiver over a simulated lossy,
// reordering, duplicating network with random write, frame and read sizes.
// Whatever happens, the receiver must read exactly the written bytes and
// the sender must end AllAcked with every chunk back in the pool.
func TestModelSendRecv(t *testing.T) {
	var frames, retx int
	for seed := range uint64(40) {
		f, r := runModel(t, seed)
		frames += f
		retx += r
	}
	// Guard against a model that silently stopped exercising losses.
	if frames < 1000 || retx < frames/20 {
		t.Fatalf("only %d frames, %d retransmissions", frames, retx)
	}
	t.Logf("%d frames, %d retransmissions", frames, retx)
}

func runModel(t *testing.T, seed uint64) (frames, retx int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	total := rng.IntN(200000)
	if seed%8 == 0 {
		total = 0 // FIN-only streams
	}
	written := pattern(seed<<20, total)
	var snd SendBuffer
	rcv := NewRecvBuffer(uint64(total) + 1)
	var inflight []sentFrame
	var network []sentFrame // delivered to the receiver later, in random order
	var got []byte
	readBuf := make([]byte, 5000)
	wOff := 0

	read := func() {
		if rng.IntN(2) == 0 {
			n, _ := rcv.Read(readBuf[:rng.IntN(len(readBuf))+1])
			got = append(got, readBuf[:n]...)
		} else if p := rcv.Peek(); len(p) > 0 {
			n := rng.IntN(len(p)) + 1
			got = append(got, p[:n]...)
			rcv.Skip(n)
		}
	}
	for step := 0; ; step++ {
		if step > 1_000_000 {
			t.Fatalf("seed %d: no progress", seed)
		}
		if snd.AllAcked() && len(network) == 0 {
			break
		}
		switch op := rng.IntN(10); {
		case op < 2 && !snd.Closed(): // application writes
			n := min(total-wOff, rng.IntN(6000))
			if w := snd.Write(written[wOff : wOff+n]); w != n {
				t.Fatalf("seed %d: Write took %d of %d", seed, w, n)
			}
			wOff += n
			if wOff == total && rng.IntN(3) == 0 {
				snd.Close()
			}
		case op < 5 && snd.HasData(): // pack a frame
			f, ok := nextFrame(t, &snd, rng.IntN(3000), written[:wOff])
			if ok {
				frames++
				if f.retx {
					retx++
				}
				inflight = append(inflight, f)
				if rng.IntN(5) != 0 { // 20% dropped by the network
					network = append(network, f)
				}
			}
		case op < 7 && len(inflight) > 0: // the fate of one packet is known
			i := rng.IntN(len(inflight))
			f := inflight[i]
			inflight[i] = inflight[len(inflight)-1]
			inflight = inflight[:len(inflight)-1]
			delivered := false
			for _, d := range network {
				delivered = delivered || d.off == f.off && len(d.data) == len(f.data) && d.fin == f.fin
			}
			switch {
			case delivered && rng.IntN(4) == 0: // ack lost: spurious loss, maybe a late ack
				snd.OnLost(f.off, len(f.data), f.fin)
				if rng.IntN(2) == 0 {
					snd.OnAcked(f.off, len(f.data), f.fin)
				}
			case delivered:
				if rng.IntN(4) == 0 { // ack arrives before the loss timer fires
					snd.OnAcked(f.off, len(f.data), f.fin)
					snd.OnLost(f.off, len(f.data), f.fin)
				} else {
					snd.OnAcked(f.off, len(f.data), f.fin)
				}
			default:
				snd.OnLost(f.off, len(f.data), f.fin)
			}
		case op < 9 && len(network) > 0: // the receiver gets a packet
			i := rng.IntN(len(network))
			f := network[i]
			if err := rcv.Push(f.off, f.data, f.fin); err != nil {
				t.Fatalf("seed %d: Push(%d, %d, %v): %v", seed, f.off, len(f.data), f.fin, err)
			}
			if err := checkRecvLayout(rcv); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if rng.IntN(4) != 0 { // else it stays for a duplicate delivery
				network[i] = network[len(network)-1]
				network = network[:len(network)-1]
			}
		case op == 9:
			read()
		case !snd.Closed() && wOff == total:
			snd.Close()
		}
	}
	for !rcv.Done() {
		before := rcv.ReadOffset()
		read()
		if rcv.ReadOffset() == before && rcv.Readable() == 0 {
			t.Fatalf("seed %d: receiver stuck at %d of %d", seed, before, total)
		}
	}
	if !bytes.Equal(got, written) {
		t.Fatalf("seed %d: receiver read %d bytes, differing from the %d written", seed, len(got), total)
	}
	if snd.data.count != 0 || len(rcv.data.segs) != 0 || rcv.data.held != 0 || snd.Buffered() != 0 {
		t.Fatalf("seed %d: chunks held: sender %d, receiver %d segments", seed, snd.data.count, len(rcv.data.segs))
	}
	if snd.SentHighWater() != uint64(total) {
		t.Fatalf("seed %d: SentHighWater %d, want %d", seed, snd.SentHighWater(), total)
	}
	return frames, retx
}
