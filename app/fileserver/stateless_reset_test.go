package fileserver

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// cuttableRelay relays UDP between one client and the server. Cutting it
// closes the socket towards the server, so whatever the server sends
// before the line is restored is lost, as when a server crashes: its
// CONNECTION_CLOSE never reaches the client.
type cuttableRelay struct {
	t      *testing.T
	server *net.UDPAddr
	front  *net.UDPConn
	back   atomic.Pointer[net.UDPConn] // nil while cut
	client atomic.Pointer[net.UDPAddr]
	wg     sync.WaitGroup
}

func newCuttableRelay(t *testing.T, server *net.UDPAddr) *cuttableRelay {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &cuttableRelay{t: t, server: server, front: front}
	r.restore()
	r.wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			r.client.Store(from)
			if back := r.back.Load(); back != nil {
				_, _ = back.Write(buf[:n])
			}
		}
	})
	t.Cleanup(func() {
		front.Close()
		r.cut()
		r.wg.Wait()
	})
	return r
}

// cut closes the line towards the server.
func (r *cuttableRelay) cut() {
	if back := r.back.Swap(nil); back != nil {
		back.Close()
	}
}

// restore opens a new line towards the server.
func (r *cuttableRelay) restore() {
	back, err := net.DialUDP("udp", nil, r.server)
	if err != nil {
		r.t.Fatal(err)
	}
	r.back.Store(back)
	r.wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, err := back.Read(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue // ECONNREFUSED while the server is down
			}
			if c := r.client.Load(); c != nil {
				_, _ = r.front.WriteToUDP(buf[:n], c)
			}
		}
	})
}

func (r *cuttableRelay) addr() string { return r.front.LocalAddr().String() }

// resetPeer returns an HTTP/3 client that dials through addr (the relay),
// and a function that waits for the end of the first connection it dialed
// and reports whether that was a stateless reset.
type resetPeer func(addr string, tlsConf *tls.Config) (c *http.Client, closeAll func(), resetSeen func() (bool, error))

// firstConn keeps the first connection a client dials, to watch its end.
// C is quic-go's or our *Conn; R the matching *StatelessResetError.
type firstConn[C interface{ Context() context.Context }, R error] chan C

func (f firstConn[C, R]) keep(c C, err error) (C, error) {
	if err == nil {
		select {
		case f <- c:
		default:
		}
	}
	return c, err
}

// resetSeen waits for the first connection's end and reports whether it
// was a stateless reset.
func (f firstConn[C, R]) resetSeen() (bool, error) {
	c := <-f
	<-c.Context().Done()
	err := context.Cause(c.Context())
	var sre R
	return errors.As(err, &sre), err
}

var resetPeers = map[string]resetPeer{
	"quic-go": func(addr string, tlsConf *tls.Config) (*http.Client, func(), func() (bool, error)) {
		first := make(firstConn[*quicgo.Conn, *quicgo.StatelessResetError], 1)
		tr := &quicgohttp3.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig:      &quicgo.Config{MaxIdleTimeout: 5 * time.Minute},
			Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quicgo.Config) (*quicgo.Conn, error) {
				return first.keep(quicgo.DialAddrEarly(ctx, addr, tc, qc))
			},
		}
		return &http.Client{Transport: tr}, func() { tr.Close() }, first.resetSeen
	},
	"ours": func(addr string, tlsConf *tls.Config) (*http.Client, func(), func() (bool, error)) {
		first := make(firstConn[*quic.Conn, *quic.StatelessResetError], 1)
		tr := &http3.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig:      &quic.Config{MaxIdleTimeout: 5 * time.Minute},
			Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
				return first.keep(quic.DialAddrEarly(ctx, addr, tc, qc))
			},
		}
		return &http.Client{Transport: tr}, func() { tr.Close() }, first.resetSeen
	},
}

// TestRestartedServerResetsOldConnections: an HTTP/3 client (quic-go's
// and ours) fetches a page and keeps the connection; the server dies
// without a word (its CONNECTION_CLOSE is lost on the cut line) and a new
// one starts on the same port with the same state directory, hence the
// same root secret and stateless reset key. The client's next request
// draws a stateless reset, and the old connection ends with a stateless
// reset error rather than the idle timeout (30 s, the server's; the
// client asks for 5 minutes).
func TestRestartedServerResetsOldConnections(t *testing.T) {
	for name, peer := range resetPeers {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			first := startServer(t, func(c *Config) { c.StateDir = state })
			udpAddr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: first.Addr().(*net.TCPAddr).Port}
			relay := newCuttableRelay(t, udpAddr)
			client, closeAll, resetSeen := peer(relay.addr(), first.h3TLS())
			defer closeAll()
			if resp, _ := get(t, client, "GET", first.URL()); resp.StatusCode != 200 {
				t.Fatalf("GET before the restart: %d", resp.StatusCode)
			}

			relay.cut()
			first.Close() // its CONNECTION_CLOSE goes nowhere
			first.stop(t)
			startServer(t, func(c *Config) { c.StateDir = state; c.Addr = udpAddr.String() })
			relay.restore()

			// The request goes out on the old connection; whether the
			// client then retries on a new one does not matter here.
			if resp, err := client.Get(first.URL()); err == nil {
				resp.Body.Close()
			}
			if ok, err := resetSeen(); !ok {
				t.Fatalf("the connection ended with %v, want a stateless reset", err)
			}
		})
	}
}

func TestStatelessResetKeyFromSecret(t *testing.T) {
	a, _ := newServer(t, nil)
	defer a.Close()
	k1, k2 := statelessResetKey(a.KeyRing()), statelessResetKey(a.KeyRing())
	if *k1 != *k2 || *k1 == (quic.StatelessResetKey{}) {
		t.Fatalf("key not derived deterministically: %x %x", k1, k2)
	}
	other, _ := newServer(t, nil) // another state directory, another secret
	defer other.Close()
	if *statelessResetKey(other.KeyRing()) == *k1 {
		t.Fatal("two secrets gave the same stateless reset key")
	}
	if fp := a.KeyRing().ExpandRoot("fastpath key", 16); string(fp) == string(k1[:16]) {
		t.Fatal("the stateless reset key is the fast-path key")
	}
}
