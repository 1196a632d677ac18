package udpio

import (
	"testing"
	"time"
)

// TestZeroAllocs: after warm-up, a WriteBatch plus the ReadBatch calls that drain it
// allocate nothing, for plain batches, user-space segmentation, and GSO+GRO.
func TestZeroAllocs(t *testing.T) {
	for _, mode := range []string{"batch", "split", "gso+gro"} {
		t.Run(mode, func(t *testing.T) {
			sc := listenUDP(t, "udp4", "127.0.0.1:0")
			rc := listenUDP(t, "udp4", "127.0.0.1:0")
			scaps := setupConn(t, sc, Config{DisableGRO: true})
			rcaps := setupConn(t, rc, Config{DisableGRO: mode != "gso+gro"})
			if mode == "gso+gro" && (!scaps.GSO || !rcaps.GRO) {
				t.Skip("kernel lacks UDP GSO or GRO")
			}
			w, r := writerReader(t, sc, WriterConfig{GSO: mode == "gso+gro"}, rc, 0)
			to := addrPort(rc)
			var out []Message
			switch mode {
			case "batch":
				for i := range 32 {
					out = append(out, Message{Buf: payload(i, 1350), Addr: to})
				}
			default:
				out = []Message{{Buf: make([]byte, 32*1200), Addr: to, SegmentSize: 1200}}
			}
			in := make([]Message, 32)
			for i := range in {
				in[i].Buf = make([]byte, GROBufferSize)
			}
			rc.SetReadDeadline(time.Now().Add(time.Minute)) // hang guard only
			var failed error
			round := func() {
				if _, err := w.WriteBatch(out); err != nil {
					failed = err
					return
				}
				for got := 0; got < 32; {
					n, err := r.ReadBatch(in)
					if err != nil {
						failed = err
						return
					}
					for _, m := range in[:n] {
						if mode == "batch" {
							got++
						} else {
							got += (m.N + 1199) / 1200
						}
					}
				}
			}
			for range 5 {
				round()
			}
			allocs := testing.AllocsPerRun(50, round)
			if failed != nil {
				t.Fatal(failed)
			}
			if allocs != 0 {
				t.Fatalf("%v allocations per batch round trip, want 0", allocs)
			}
		})
	}
}
