package udpio

import (
	"testing"
	"time"
)

// The loopback benchmarks count one op per datagram of 1350 bytes (ns/op is per
// datagram) and run in lock step, a burst of 32 sent and then drained, so that nothing
// is dropped and the run stays bounded by b.N.

const benchSize = 1350

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
}

func benchPair(b *testing.B, senderGSO, receiverGRO bool) (*Writer, *Reader, []Message, []Message) {
	sc := listenUDP(b, "udp4", "127.0.0.1:0")
	rc := listenUDP(b, "udp4", "127.0.0.1:0")
	scaps := setupConn(b, sc, Config{DisableGRO: true})
	rcaps := setupConn(b, rc, Config{DisableGRO: !receiverGRO})
	if (senderGSO && !scaps.GSO) || (receiverGRO && !rcaps.GRO) {
		b.Skip("kernel lacks UDP GSO or GRO")
	}
	w, err := NewWriter(sc, WriterConfig{GSO: senderGSO})
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewReader(rc, 32)
	if err != nil {
		b.Fatal(err)
	}
	rc.SetReadDeadline(time.Now().Add(10 * time.Minute)) // hang guard only
	in := make([]Message, 32)
	size := 2048
	if receiverGRO {
		size = GROBufferSize
	}
	for i := range in {
		in[i].Buf = make([]byte, size)
	}
	var out []Message
	if senderGSO {
		out = []Message{{Buf: make([]byte, 32*benchSize), Addr: addrPort(rc), SegmentSize: benchSize}}
	} else {
		for i := range 32 {
			out = append(out, Message{Buf: payload(i, benchSize), Addr: addrPort(rc)})
		}
	}
	return w, r, out, in
}

func runBatchBench(b *testing.B, gso, gro bool) {
	w, r, out, in := benchPair(b, gso, gro)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += 32 {
		burst := min(32, b.N-sent)
		msgs := out
		if gso {
			msgs[0].Buf = msgs[0].Buf[:burst*benchSize]
		} else {
			msgs = out[:burst]
		}
		if _, err := w.WriteBatch(msgs); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < burst; {
			n, err := r.ReadBatch(in)
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range in[:n] {
				got += max(1, (m.N+benchSize-1)/benchSize)
			}
		}
	}
	b.StopTimer()
	reportRate(b)
}

// BenchmarkLoopbackBatch32: sendmmsg / recvmmsg, 32 datagrams per call.
func BenchmarkLoopbackBatch32(b *testing.B) { runBatchBench(b, false, false) }

// BenchmarkLoopbackGSOGRO: one GSO buffer of 32 segments, received with GRO.
func BenchmarkLoopbackGSOGRO(b *testing.B) { runBatchBench(b, true, true) }
