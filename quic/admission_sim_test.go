package quic

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
)

// Floods that pass Retry (docs/abuse.md): attackers with real addresses
// complete Retries and handshakes and hold connections, in virtual time.

// admissionServer starts an echo server at simServerAddr that accepts
// every connection as soon as it is ready and keeps it until it ends.
func (s *sim) admissionServer(av *AddressValidationConfig, conf *Config) (*Transport, net.Addr) {
	s.t.Helper()
	tr := &Transport{AddressValidation: av, Conn: s.socket(simServerAddr)}
	s.t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(s.t), conf)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(cancel)
	serveStreams(ctx, ln.Accept, func(st *Stream) { echo(st) })
	return tr, ln.Addr()
}

// admissionClientConf: connections outlive the test's virtual seconds.
var admissionClientConf = &Config{MaxIdleTimeout: 5 * time.Minute}

// tryDial dials from tr with conf (nil: admissionClientConf); the bound
// is a hang guard in virtual time.
func tryDial(t *testing.T, tr *Transport, to net.Addr, conf *Config) (*Conn, error) {
	if conf == nil {
		conf = admissionClientConf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return tr.Dial(ctx, to, clientTLS(t), conf)
}

// fetch dials, echoes a little and closes: a benign client's visit.
func fetch(t *testing.T, tr *Transport, to net.Addr, conf *Config) error {
	c, err := tryDial(t, tr, to, conf)
	if err != nil {
		return err
	}
	defer c.CloseWithError(0, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return echoErr(ctx, c, c.OpenStreamSync, 2<<10)
}

// fetchQuicGo is fetch with quic-go's client on tr.
func fetchQuicGo(t *testing.T, tr *quicgo.Transport, to net.Addr, conf *quicgo.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := tr.Dial(ctx, to, clientTLS(t), conf)
	if err != nil {
		return err
	}
	defer c.CloseWithError(0, "")
	return echoErr(ctx, c, c.OpenStreamSync, 2<<10)
}

// isRefused reports whether err is the server's CONNECTION_REFUSED, as
// our client or quic-go's reports it.
func isRefused(err error) bool {
	var ours *TransportError
	var theirs *quicgo.TransportError
	return errors.As(err, &ours) && ours.Remote && ours.ErrorCode == ConnectionRefused ||
		errors.As(err, &theirs) && theirs.Remote && theirs.ErrorCode == quicgo.ConnectionRefused
}

// attackers are hosts that own their addresses: each keeps opening
// connections and holds every one it gets, and after a refusal tries
// again retry later, until stop.
type attackers struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	held     map[int]int // connections held, by prefix number
	refused  int
	maxByPfx map[int]int // the most each prefix held at once
}

func (s *sim) attack(to net.Addr, prefixes []int, hostsPerPrefix int, retry time.Duration) *attackers {
	a := &attackers{stop: make(chan struct{}), held: map[int]int{}, maxByPfx: map[int]int{}}
	for _, p := range prefixes {
		for h := range hostsPerPrefix {
			tr := s.transport(simPrefixAddr(p, h+1))
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				for {
					select {
					case <-a.stop:
						return
					default:
					}
					if _, err := tryDial(s.t, tr, to, nil); err != nil {
						a.mu.Lock()
						a.refused++
						a.mu.Unlock()
						select {
						case <-a.stop:
							return
						case <-time.After(retry):
						}
						continue
					}
					a.mu.Lock()
					a.held[p]++
					a.maxByPfx[p] = max(a.maxByPfx[p], a.held[p])
					a.mu.Unlock()
				}
			}()
		}
	}
	return a
}

func (a *attackers) end() {
	close(a.stop)
	a.wg.Wait()
}

func (a *attackers) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, v := range a.held {
		n += v
	}
	return n
}

// visits runs n client visits, workers at a time; visit returns whether
// it succeeded.
func visits(n, workers int, visit func(i int) bool) (ok int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if visit(i) {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return ok
}

// admissionLimits are the limits of the attack tests: small enough to
// fill in a test, as a small server's are to a botnet.
func admissionLimits(adm *AdmissionConfig) *Config {
	return &Config{MaxConnections: 128, MaxHandshakes: 64, MaxIdleTimeout: 5 * time.Minute, Admission: adm}
}

// TestAdmissionOnePrefixAttack: 64 attacker addresses of one /24 pass
// Retry, complete handshakes and hold connections, retrying as fast as
// they are refused (every 50 ms); 200 benign clients from 200 other /24s
// visit meanwhile, about 60 a second. The attacker's prefix holds at most
// half of MaxConnections (its share while alone), every benign visit
// succeeds, and its p95 time (Retry, handshake, echo) is within twice an
// unloaded visit's: no refusal or extra round trip on the way (virtual
// time: CPU costs nothing here). With the global limits only, the
// attacker holds them all and benign clients are refused.
func TestAdmissionOnePrefixAttack(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		conf := admissionLimits(&AdmissionConfig{})
		tr, addr := s.admissionServer(&AddressValidationConfig{Policy: AlwaysRetry()}, conf)
		start := time.Now()
		if err := fetch(t, s.transport(simPrefixAddr(99, 1)), addr, nil); err != nil {
			t.Fatal(err)
		}
		unloaded := time.Since(start)
		atk := s.attack(addr, []int{1}, 64, 50*time.Millisecond)
		time.Sleep(2 * time.Second)
		const benign = 200
		var tookMu sync.Mutex
		var took []time.Duration
		ok := visits(benign, 8, func(i int) bool {
			start := time.Now()
			err := fetch(t, s.transport(simPrefixAddr(100+i, 1)), addr, nil)
			if err != nil && !isRefused(err) {
				t.Errorf("benign visit %d: %v", i, err)
			}
			if err == nil {
				tookMu.Lock()
				took = append(took, time.Since(start))
				tookMu.Unlock()
			}
			// About 60 visits a second: each closed connection holds
			// its slot while it drains.
			time.Sleep(100 * time.Millisecond)
			return err == nil
		})
		slices.Sort(took)
		var p95 time.Duration
		if len(took) > 0 {
			p95 = took[len(took)*95/100]
		}
		t.Logf("benign visit: unloaded %v, p95 under attack %v", unloaded, p95)
		if p95 > 2*unloaded {
			t.Errorf("benign p95 %v, more than twice the unloaded %v", p95, unloaded)
		}
		atk.end()
		held, most := atk.total(), atk.maxByPfx[1]
		st := tr.Stats()
		t.Logf("attacker /24 held %d connections (most %d of %d), refused %d times; benign %d/%d; refusals %v; top refused %v",
			held, most, conf.MaxConnections, atk.refused, ok, benign, st.Refused, st.TopRefusedPrefixes)
		if ok*100 < benign*99 {
			t.Errorf("benign success %d/%d, want at least 99%%", ok, benign)
		}
		if most > conf.MaxConnections/2 {
			t.Errorf("the attacker's prefix held %d connections, more than its share %d", most, conf.MaxConnections/2)
		}
		if st.Refused[RefusedPrefixConnections.String()] == 0 {
			t.Errorf("no prefix_connections refusal counted: %v", st.Refused)
		}
		if len(st.TopRefusedPrefixes) == 0 || st.TopRefusedPrefixes[0].Prefix.String() != "100.64.1.0/24" {
			t.Errorf("top refused prefixes %v, want the attacker's 100.64.1.0/24 first", st.TopRefusedPrefixes)
		}
	})
}

// TestAdmissionSpreadAttack: attackers over 64 /24s (2 addresses each)
// hold every connection slot open to clients without a token. Returning
// clients (ours and quic-go's), with the NEW_TOKEN token of an earlier
// visit, arriving at 10 per second, still get in (the reserve for them);
// fresh clients (ours and quic-go's) are refused with CONNECTION_REFUSED
// in one round trip, never left hanging. With the global limits only, the
// returning clients are refused too.
func TestAdmissionSpreadAttack(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		conf := admissionLimits(&AdmissionConfig{})
		tr, addr := s.admissionServer(&AddressValidationConfig{Policy: AlwaysRetry()}, conf)
		// Returning clients visit once before the attack and keep the
		// server's token; every fourth is quic-go's.
		const returning, fresh = 32, 32
		type client struct {
			visit func() error
			put   <-chan struct{}
		}
		clients := make([]client, returning)
		for i := range clients {
			from := simPrefixAddr(500+i, 1)
			if i%4 == 0 {
				store := &notifyingQuicGoStore{TokenStore: quicgo.NewLRUTokenStore(4, 4), put: make(chan struct{}, 16)}
				qtr := &quicgo.Transport{Conn: s.socket(from).Conn}
				t.Cleanup(func() { qtr.Close() })
				qconf := &quicgo.Config{MaxIdleTimeout: 5 * time.Minute, TokenStore: store}
				clients[i] = client{visit: func() error { return fetchQuicGo(t, qtr, addr, qconf) }, put: store.put}
			} else {
				store := newNotifyingStore()
				ctr := s.transport(from)
				cconf := &Config{MaxIdleTimeout: 5 * time.Minute, TokenStore: store}
				clients[i] = client{visit: func() error { return fetch(t, ctr, addr, cconf) }, put: store.put}
			}
			if err := clients[i].visit(); err != nil {
				t.Fatalf("returning client %d, first visit: %v", i, err)
			}
			waitSignal(t, s.ctx(), clients[i].put, "NEW_TOKEN token")
		}

		prefixes := make([]int, 64)
		for i := range prefixes {
			prefixes[i] = 1 + i
		}
		atk := s.attack(addr, prefixes, 2, 200*time.Millisecond)
		time.Sleep(2 * time.Second)
		held := atk.total()
		unknownCap := conf.MaxConnections - conf.MaxConnections/8
		if held < unknownCap {
			t.Fatalf("attackers hold %d connections, want the %d open to clients without a token", held, unknownCap)
		}

		back := visits(returning, 4, func(i int) bool {
			err := clients[i].visit()
			// Arrivals at 10 per second: a closed connection holds its
			// slot while it drains.
			time.Sleep(400 * time.Millisecond)
			if err != nil && !isRefused(err) {
				t.Errorf("returning client %d: %v", i, err)
			}
			return err == nil
		})
		var slowestMu sync.Mutex
		var slowest time.Duration
		refused := visits(fresh, 4, func(i int) bool {
			start := time.Now()
			var err error
			if from := simPrefixAddr(600+i, 1); i%4 == 0 {
				qtr := &quicgo.Transport{Conn: s.socket(from).Conn}
				defer qtr.Close()
				err = fetchQuicGo(t, qtr, addr, &quicgo.Config{})
			} else {
				_, err = tryDial(t, s.transport(from), addr, nil)
			}
			took := time.Since(start)
			if !isRefused(err) {
				t.Errorf("fresh client %d: %v, want CONNECTION_REFUSED", i, err)
				return false
			}
			// Refused before a Retry: one round trip.
			if took > 2*simLink.Delay {
				t.Errorf("fresh client %d refused after %v, want one round trip (%v)", i, took, 2*simLink.Delay)
			}
			slowestMu.Lock()
			slowest = max(slowest, took)
			slowestMu.Unlock()
			return true
		})
		atk.end()
		st := tr.Stats()
		t.Logf("attackers (64 /24s) held %d connections, refused %d times; returning %d/%d; fresh refused %d/%d in at most %v; refusals %v",
			held, atk.refused, back, returning, refused, fresh, slowest, st.Refused)
		if back*100 < returning*99 {
			t.Errorf("returning clients' success %d/%d, want at least 99%%", back, returning)
		}
	})
}

// TestAdmissionPrefixRate: a prefix gets its burst of new connections,
// then is refused (prefix_rate) until its bucket refills; another prefix
// is not affected.
func TestAdmissionPrefixRate(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		tr, addr := s.admissionServer(nil, &Config{Admission: &AdmissionConfig{NewConnectionRate: 2, NewConnectionBurst: 4}})
		a, b := s.transport(simPrefixAddr(1, 1)), s.transport(simPrefixAddr(1, 2))
		for i := range 4 {
			if err := fetch(t, []*Transport{a, b}[i%2], addr, nil); err != nil {
				t.Fatalf("connection %d of the burst: %v", i, err)
			}
		}
		err := fetch(t, b, addr, nil)
		if !isRefused(err) {
			t.Fatalf("past the burst: %v, want CONNECTION_REFUSED", err)
		}
		// Each datagram of the client's first flight is refused.
		if n := tr.Stats().Refused[RefusedPrefixRate.String()]; n == 0 {
			t.Fatal("no prefix_rate refusal counted")
		}
		if err := fetch(t, s.transport(simPrefixAddr(2, 1)), addr, nil); err != nil {
			t.Fatalf("another prefix: %v", err)
		}
		time.Sleep(time.Second) // two more tokens
		for i := range 2 {
			if err := fetch(t, a, addr, nil); err != nil {
				t.Fatalf("after a second, connection %d: %v", i, err)
			}
		}
	})
}

// TestAdmissionPrefixSpray: clients from 1000 /24s, 100 at a time, each
// start a handshake that times out (their answers are lost): at most
// MaxPrefixes are tracked, the bytes counted for them stay bounded, and
// a real client still connects.
func TestAdmissionPrefixSpray(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		const maxPrefixes, sprayed = 128, 1000
		tr, addr := s.admissionServer(&AddressValidationConfig{Policy: NeverRetry()},
			&Config{HandshakeIdleTimeout: time.Second, Admission: &AdmissionConfig{MaxPrefixes: maxPrefixes}})
		pkts, _ := floodInitials(t, sprayed)
		most, made := 0, 0
		for i, pkt := range pkts {
			s.net.Inject(simnet.Packet{From: simPrefixAddr(i, 7), To: simServerAddr, Data: pkt}, 0)
			if i%100 == 99 {
				synctest.Wait()
				st := tr.Stats()
				most = max(most, st.Prefixes)
				made += st.Handshaking
				time.Sleep(2 * time.Second) // the handshakes time out
			}
		}
		st := tr.Stats()
		t.Logf("after %d prefixes (%d handshakes): at most %d tracked, now %d in %d bytes", sprayed, made, most, st.Prefixes, st.PrefixTableBytes)
		if made != sprayed {
			t.Fatalf("%d handshakes started, want %d", made, sprayed)
		}
		if most > maxPrefixes || st.Prefixes != maxPrefixes || st.PrefixTableBytes > maxPrefixes*200 {
			t.Fatalf("%d prefixes tracked (at most %d) in %d bytes, want at most %d in at most %d bytes",
				st.Prefixes, most, st.PrefixTableBytes, maxPrefixes, maxPrefixes*200)
		}
		if err := fetch(t, s.transport(simPrefixAddr(9000, 1)), addr, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestAdmissionHandshakeShare: one /24 keeps starting handshakes it never
// finishes (complete ClientHellos from 64 addresses, the server's answers
// lost), each holding a handshake slot until the handshake timeout. Its
// prefix gets half of MaxHandshakes, and clients from other prefixes
// complete theirs meanwhile; with the global limit only, the attacker's
// stalled handshakes take every slot and they are refused.
func TestAdmissionHandshakeShare(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		conf := &Config{MaxHandshakes: 64, MaxIdleTimeout: 5 * time.Minute, Admission: &AdmissionConfig{}}
		tr, addr := s.admissionServer(&AddressValidationConfig{Policy: NeverRetry()}, conf)
		pkts, _ := floodInitials(t, 300)
		for i, pkt := range pkts {
			s.net.Inject(simnet.Packet{From: simPrefixAddr(1, 1+i%64), To: simServerAddr, Data: pkt}, time.Duration(i)*time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		st := tr.Stats()
		if st.Handshaking != conf.MaxHandshakes/2 {
			t.Fatalf("the attacker's prefix holds %d handshakes, want its share %d", st.Handshaking, conf.MaxHandshakes/2)
		}
		const benign = 40
		ok := visits(benign, 8, func(i int) bool {
			err := fetch(t, s.transport(simPrefixAddr(100+i, 1)), addr, nil)
			if err != nil && !isRefused(err) {
				t.Errorf("benign visit %d: %v", i, err)
			}
			return err == nil
		})
		st = tr.Stats()
		t.Logf("stalled handshakes held: %d of %d; benign %d/%d; refusals %v", conf.MaxHandshakes/2, conf.MaxHandshakes, ok, benign, st.Refused)
		if ok != benign {
			t.Errorf("benign success %d/%d", ok, benign)
		}
		if st.Refused[RefusedPrefixHandshakes.String()] == 0 {
			t.Errorf("no prefix_handshakes refusal: %v", st.Refused)
		}
	})
}

// TestAdmissionClosedGiveBackSlots: a connection that has closed gives its
// connection slot, and its prefix's share, back when it starts draining,
// not three PTOs later at teardown (RFC 9000 section 10.2: a draining
// connection only absorbs late packets). Visits one after another, each
// closed by the client, fill neither the global cap (2) nor, with
// admission, a lone prefix's share (half of 4) with connections that have
// ended. Before the fix the visit after the cap's (the share's) worth was
// refused (connection_cap, prefix_connections) while the others drained.
// Closing connections have a bound of their own (MaxConnections), so the
// count is checked only while under it.
func TestAdmissionClosedGiveBackSlots(t *testing.T) {
	for _, tc := range []struct {
		name string
		conf *Config
	}{
		{"GlobalCap", &Config{MaxConnections: 3, MaxIdleTimeout: 5 * time.Minute}},
		{"PrefixShare", &Config{MaxConnections: 4, MaxIdleTimeout: 5 * time.Minute, Admission: &AdmissionConfig{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				tr, addr := s.admissionServer(nil, tc.conf)
				cl := s.transport(simPrefixAddr(1, 1))
				for i := range tc.conf.MaxConnections + 1 {
					if err := fetch(t, cl, addr, nil); err != nil {
						t.Fatalf("visit %d: %v (refused: %v)", i, err, tr.Stats().Refused)
					}
					// The client's close reaches the server, which drains
					// for three PTOs (over 100 ms here).
					time.Sleep(20 * time.Millisecond)
					if n := tr.Stats().Connections; n != 0 && i < tc.conf.MaxConnections {
						t.Fatalf("after visit %d: %d connections counted, want 0 (draining ones hold none)", i, n)
					}
				}
				tr.server.mu.Lock()
				closing := tr.server.load.closing
				tr.server.mu.Unlock()
				if closing == 0 {
					t.Fatal("no draining connection counted among the closing: the test saw no draining period")
				}
			})
		})
	}
}

// TestAdmissionClosingBounded: closing connections count in a bound of
// their own, MaxConnections of them; past it a closing connection keeps
// its connection slot until teardown. Everything is given back once.
func TestAdmissionClosingBounded(t *testing.T) {
	s := &baseServer{config: &Config{MaxConnections: 2}}
	var conns [3]admission
	for i := range conns {
		conns[i].holdsConnSlot, conns[i].holdsHandshakeSlot = true, true
	}
	s.load.conns, s.load.handshaking = 3, 3
	for i := range conns {
		conns[i].closed(s)
		conns[i].closed(s) // closing, then draining: counted once
	}
	if s.load.conns != 1 || s.load.closing != 2 || s.load.handshaking != 0 {
		t.Fatalf("conns %d, closing %d, handshaking %d; want 1, 2, 0", s.load.conns, s.load.closing, s.load.handshaking)
	}
	if !conns[2].holdsConnSlot || conns[2].holdsClosingSlot {
		t.Fatal("the third closing connection did not keep its connection slot")
	}
	for i := range conns {
		conns[i].release(s, nil)
	}
	if s.load != (serverLoad{}) {
		t.Fatalf("after teardown: %+v, want nothing held", s.load)
	}
}
