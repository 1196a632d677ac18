package quic

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
)

// eventLog is a Config.Tracer that keeps every event of its traces.
type eventLog struct {
	mu     sync.Mutex
	events []qlogwriter.Event
}

func (l *eventLog) tracer(context.Context, bool, ConnectionID) qlogwriter.Trace { return l }
func (l *eventLog) AddProducer() qlogwriter.Recorder                            { return l }
func (l *eventLog) Close() error                                                { return nil }
func (l *eventLog) RecordEvent(ev qlogwriter.Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *eventLog) all() []qlogwriter.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// assigned returns the IDs of the tuple_assigned events, in order.
func (l *eventLog) assigned() []string {
	var ids []string
	for _, ev := range l.all() {
		if e, ok := ev.(qlog.TupleAssigned); ok {
			ids = append(ids, e.TupleID)
		}
	}
	return ids
}

// TestPathTuplesQuicGoServer: our client, with a Config.Tracer, moves to a
// second socket, back to the one it dialed on (AddPath of that Transport
// again), and to the second once more, against quic-go's server, echoing
// data on each. The events name the paths as quic-go does (tuple_assigned
// "1" for the new path, "0" and "" at each Switch), PATH_RESPONSEs to the
// server's challenges leave from the path that was challenged, and no
// server connection ID is used on two tuples (RFC 9000 section 9.5), also
// when a path is used a second time.
func TestPathTuplesQuicGoServer(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		addr := s.quicGoServer(nil)
		var log eventLog
		tr1 := s.transport(simClientAddr(1))
		c, err := tr1.Dial(ctx, addr, clientTLS(t), &Config{MaxIdleTimeout: 20 * time.Second, Tracer: log.tracer})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		echoOurs(t, ctx, c, 16<<10)
		move := func(tr *Transport, probe bool) {
			t.Helper()
			p, err := c.AddPath(tr)
			if err != nil {
				t.Fatal(err)
			}
			if probe {
				if err := p.Probe(ctx); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond) // the server's own challenge, answered
			}
			if err := p.Switch(); err != nil {
				t.Fatal(err)
			}
			echoOurs(t, ctx, c, 16<<10)
			if got, want := c.LocalAddr().String(), tr.Conn.LocalAddr().String(); got != want {
				t.Fatalf("LocalAddr %s, want %s", got, want)
			}
		}
		tr2 := s.transport(simClientAddr(2))
		move(tr2, true)
		if got, want := log.assigned(), []string{"1", "0", ""}; !slices.Equal(got, want) {
			t.Errorf("tuples assigned after the first switch: %q, want %q", got, want)
		}
		move(tr1, true)  // back to the socket dialed on
		move(tr2, false) // validated before
		if got, want := log.assigned(), []string{"1", "0", "", "1", "", "0", ""}; !slices.Equal(got, want) {
			t.Errorf("tuples assigned: %q, want %q", got, want)
		}

		type endpoints struct{ local, remote qlog.TupleEndpointInfo }
		tuples := map[string]endpoints{}
		usedOn := map[ConnectionID]endpoints{}
		challenged := map[[8]byte]endpoints{} // where each server challenge came in
		responses := 0
		for _, ev := range log.all() {
			switch e := ev.(type) {
			case qlog.StartedConnection:
				tuples[""] = endpoints{e.Local, e.Remote}
			case qlog.TupleAssigned:
				tuples[e.TupleID] = endpoints{e.Local, e.Remote}
			case qlog.PacketReceived:
				for _, f := range e.Frames {
					if pc, ok := f.Frame.(*qlog.PathChallengeFrame); ok {
						challenged[pc.Data] = tuples[e.Tuple]
					}
				}
			case qlog.PacketSent:
				ep, ok := tuples[e.Tuple]
				if !ok {
					t.Fatalf("packet sent on tuple %q before it was assigned", e.Tuple)
				}
				for _, f := range e.Frames {
					if pr, ok := f.Frame.(*qlog.PathResponseFrame); ok {
						responses++
						if from, ok := challenged[pr.Data]; !ok || from != ep {
							t.Errorf("PATH_RESPONSE sent from %v, the challenge came to %v", ep.local, from.local)
						}
					}
				}
				id := e.Header.DestConnectionID
				if id.Len() == 0 {
					continue
				}
				if prev, ok := usedOn[id]; ok && prev != ep {
					t.Errorf("server connection ID %s used on two tuples: %v and %v", id, prev, ep)
				}
				usedOn[id] = ep
			}
		}
		if responses == 0 {
			t.Error("the server challenged no new path")
		}
	})
}

// TestPathTuplesOurServer: quic-go's client moves to a second socket; our
// server, with a Config.Tracer, names the new peer address "0" when it
// first hears from it (the probe, answered on that tuple) and moves ""
// there when it follows the client, as quic-go's server does.
func TestPathTuplesOurServer(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		var log eventLog
		srv := s.server(&Transport{AddressValidation: &AddressValidationConfig{Policy: NeverRetry()}},
			&Config{MaxIdleTimeout: 20 * time.Second, Tracer: log.tracer})
		_, c := s.dialQuicGo(simClientAddr(1), srv.addr)
		echoOver(t, ctx, c, 16<<10)
		p, err := c.AddPath(s.quicGoTransport(simClientAddr(2)))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Probe(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := log.assigned(), []string{"0"}; !slices.Equal(got, want) {
			t.Errorf("tuples assigned after the probe: %q, want %q", got, want)
		}
		probes := 0
		for _, ev := range log.all() {
			if e, ok := ev.(qlog.PacketSent); ok && hasQlogFrame[*qlog.PathResponseFrame](e.Frames) {
				probes++
				if e.Tuple != "0" {
					t.Errorf("PATH_RESPONSE to the probe sent on tuple %q, want \"0\"", e.Tuple)
				}
			}
		}
		if probes == 0 {
			t.Error("no PATH_RESPONSE to the probe")
		}
		if err := p.Switch(); err != nil {
			t.Fatal(err)
		}
		echoOver(t, ctx, c, 16<<10)
		if got := log.assigned(); len(got) < 2 || !slices.Equal(got[:2], []string{"0", ""}) {
			t.Errorf("tuples assigned after the switch: %q, want \"0\", \"\" first", got)
		}
	})
}

func hasQlogFrame[T any](frames []qlog.Frame) bool {
	return slices.ContainsFunc(frames, func(f qlog.Frame) bool { _, ok := f.Frame.(T); return ok })
}
