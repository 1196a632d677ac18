package agent

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// TestWorkersConcurrent runs N workers on N goroutines sharing the key ring,
// key cache and fast-path cache, while another goroutine reads Stats and
// metrics and beats. Run with -race.
func TestWorkersConcurrent(t *testing.T) {
	const workers, rounds = 4, 200
	env := newTestEnv(t, func(c *Config) { c.Workers = workers })
	is, err := env.kr.NewIssuer(token.SourceHost)
	if err != nil {
		t.Fatal(err)
	}
	type input struct {
		from    netip.AddrPort
		initial []byte // no token
		retried []byte // valid host retry token
		rscid   []byte
	}
	in := make([]input, workers)
	for i := range in {
		from := netip.AddrPortFrom(clientAddr.Addr(), uint16(1000+i))
		rscid := []byte{0xee, byte(i), 0, 0, 0, 0, 0, 1}
		tok, err := is.AppendRetry(nil, from, odcid, rscid, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		in[i] = input{from, clientInitial(t, wire.Version1, odcid, cscid, nil, 1200),
			clientInitial(t, wire.Version2, rscid, cscid, tok, 1200), rscid}
	}
	garbage := []byte{0xc3, 0xff, 0xff}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				env.eng.Stats()
				env.eng.Beat()
			}
		}
	}()
	for i := range workers {
		wg.Add(1)
		go func(w *Worker, in input) {
			defer wg.Done()
			out := make([]byte, 0, MaxReplyLen)
			for range rounds {
				v, r, reply := w.Process(in.initial, in.from, out)
				if v != SendReply || r != ReasonRetry {
					t.Errorf("Initial: %v %v", v, r)
					return
				}
				if err := handshake.VerifyRetryIntegrityTag(reply, handshake.Version1, odcid); err != nil {
					t.Errorf("Retry: %v", err)
					return
				}
				if v, r, _ := w.Process(in.retried, in.from, out); v != Forward || r != ReasonRetryTokenForwarded {
					t.Errorf("retried Initial: %v %v", v, r)
					return
				}
				w.Process(garbage, in.from, out)
			}
			w.Flush()
		}(env.eng.Worker(i), in[i])
	}
	wg.Wait()
	close(stop)

	s := env.eng.Stats()
	if s.Packets[ReasonRetry] != workers*rounds || s.Packets[ReasonRetryTokenForwarded] != workers*rounds ||
		s.Packets[ReasonMalformed] != workers*rounds {
		t.Fatalf("stats: retry %d forward %d malformed %d, want %d each",
			s.Packets[ReasonRetry], s.Packets[ReasonRetryTokenForwarded], s.Packets[ReasonMalformed], workers*rounds)
	}
	for _, x := range in {
		if !env.cache.Contains(x.rscid) {
			t.Fatalf("RSCID %x not admitted", x.rscid)
		}
	}
}
