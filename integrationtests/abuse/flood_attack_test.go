//go:build linux

package abuse

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/flood"
)

// floodAttack is issue 11's handshake flood: complete one-datagram client
// Initials (a real ClientHello from crypto/tls naming the packet's SCID,
// so the server would carry each to 0.5-RTT; offload/flood's pool mode),
// each with fresh connection IDs, from one UDP socket that never answers.
// It classifies the server's first answer to each Initial by the answer's
// DCID (the Initial's SCID): a Retry, or anything else (the server's
// handshake flight: a connection was created; or a stateless close).
type floodAttack struct {
	pc     *net.UDPConn
	server *net.UDPAddr

	mu      sync.Mutex
	index   map[string]int // SCID -> packet number
	pkts    [][]byte
	first   []answer
	retries int // packets whose first answer was a Retry
	others  int // packets first answered otherwise
	// Every answer, not only the first of each packet (for a flood that
	// sends packets again, as the benchmark does).
	allRetries, allAnswers int
	connected              []bool // the server answered the packet with something else than a Retry
	got                    chan struct{}
}

type answer uint8

const (
	answerNone answer = iota
	answerRetry
	answerOther
)

// floodPoolBatch is how many packets a Generator builds per call to more.
const floodPoolBatch = 256

// newFloodAttack builds n Initials and a socket, in the clients'
// namespace, to send them to the server.
func newFloodAttack(tb testing.TB, s *server, n int) *floodAttack {
	tb.Helper()
	to, err := net.ResolveUDPAddr("udp", s.addr)
	if err != nil {
		tb.Fatal(err)
	}
	var pc *net.UDPConn
	if err := s.inClientNS(func() (err error) { pc, err = net.ListenUDP("udp", nil); return err }); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pc.Close() })
	// Answers are counted, so none may be lost in our own socket.
	_ = pc.SetReadBuffer(4 << 20)
	a := &floodAttack{pc: pc, server: to, index: map[string]int{}, got: make(chan struct{}, 1)}
	for a.len() < n {
		if err := a.more(min(n-a.len(), 4096)); err != nil {
			tb.Fatal(err)
		}
	}
	go a.read()
	return a
}

func (a *floodAttack) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pkts)
}

// more builds n further Initials with fresh connection IDs.
func (a *floodAttack) more(n int) error {
	gen, err := flood.NewGenerator(flood.GeneratorConfig{PoolSize: n})
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for range n {
		pkt, err := gen.Next(nil)
		if err != nil {
			return err
		}
		var hdr wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &hdr); err != nil {
			return fmt.Errorf("flood Initial: %w", err)
		}
		if _, dup := a.index[string(hdr.SrcConnID)]; dup {
			return fmt.Errorf("flood Initial: SCID %x repeated", hdr.SrcConnID)
		}
		a.index[string(hdr.SrcConnID)] = len(a.pkts)
		a.pkts = append(a.pkts, pkt)
		a.first = append(a.first, answerNone)
		a.connected = append(a.connected, false)
	}
	return nil
}

// read classifies what the server sends until the socket closes.
func (a *floodAttack) read() {
	buf := make([]byte, 2048)
	for {
		n, err := a.pc.Read(buf)
		if err != nil {
			return
		}
		var hdr wire.LongHeader
		if n == 0 || !wire.IsLongHeader(buf[0]) || wire.ParseLongHeader(buf[:n], &hdr) != nil {
			continue
		}
		kind := answerOther
		if hdr.Type == wire.PacketTypeRetry {
			kind = answerRetry
		}
		a.mu.Lock()
		i, ok := a.index[string(hdr.DestConnID)]
		if ok {
			a.allAnswers++
			if kind == answerRetry {
				a.allRetries++
			} else {
				a.connected[i] = true
			}
			if a.first[i] == answerNone {
				a.first[i] = kind
				if kind == answerRetry {
					a.retries++
				} else {
					a.others++
				}
			}
		}
		a.mu.Unlock()
		if ok {
			select {
			case a.got <- struct{}{}:
			default:
			}
		}
	}
}

// counts returns how many packets were first answered with a Retry and
// otherwise.
func (a *floodAttack) counts() (retries, others int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.retries, a.others
}

// floodWindow bounds the Initials sent and not answered yet. The server
// answers each in microseconds, so at 1000/s the window never binds on a
// healthy machine; on a loaded one it slows the flood instead of queueing
// it in the server's socket buffer (or dropping it there), so the counts,
// not the machine's load, decide the outcome. An Initial unanswered for
// floodGiveUp stops being waited for (it counts as not retried).
const (
	floodWindow = 128
	floodGiveUp = time.Second
)

// send sends packet i, first waiting while floodWindow are unanswered.
// sent is the number sent before, for the window.
func (a *floodAttack) send(i, sent int, waitedOut *int) error {
	for {
		r, o := a.counts()
		if sent-r-o-*waitedOut < floodWindow {
			break
		}
		select {
		case <-a.got:
		case <-time.After(floodGiveUp):
			*waitedOut++
		}
	}
	a.mu.Lock()
	pkt := a.pkts[i]
	a.mu.Unlock()
	_, err := a.pc.WriteToUDP(pkt, a.server)
	return err
}

// settle waits until every Initial sent was answered, or none was for
// floodGiveUp.
func (a *floodAttack) settle(sent int) {
	for {
		r, o := a.counts()
		if r+o >= sent {
			return
		}
		select {
		case <-a.got:
		case <-time.After(floodGiveUp):
			return
		}
	}
}
