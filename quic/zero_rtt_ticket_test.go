package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/testcert"
)

// ticketLink is a 1 Mbit/s path: a server flight of a few KiB arrives over
// tens of milliseconds, so a client reads the server's EncryptedExtensions
// (and learns that its early data was rejected) well before the server's
// Finished.
var ticketLink = simnet.LinkConfig{Delay: 5 * time.Millisecond, Bandwidth: 125000}

var (
	longChainOnce sync.Once
	longChain     tls.Certificate
)

// longChainCert is the test certificate followed by a filler certificate of
// about 4 KiB, a chain the size of a real one, so that the server's
// Handshake flight takes several datagrams.
func longChainCert(t testing.TB) tls.Certificate {
	longChainOnce.Do(func() {
		names := []string{"filler"}
		for i := range 120 {
			names = append(names, fmt.Sprintf("filler-%03d.example.com", i))
		}
		leaf, filler := testcert.Certificate(t), testcert.New(t, names...)
		longChain = tls.Certificate{Certificate: [][]byte{leaf.Certificate[0], filler.Certificate[0]}, PrivateKey: leaf.PrivateKey, Leaf: leaf.Leaf}
	})
	return longChain
}

// ticketTestConn is the part of a client connection, ours or quic-go's,
// that TestZeroRTTRejectedCloseKeepsFreshTicket uses.
type ticketTestConn interface {
	// query opens a stream, writes msg, closes the stream and reads the
	// echo to its end.
	query(msg []byte) ([]byte, error)
	handshakeComplete() bool
	// resumption reports whether TLS resumed a session and 0-RTT was used.
	resumption() (resumed, used0RTT bool)
	close()
}

type ourTicketConn struct{ c *Conn }

func (o ourTicketConn) query(msg []byte) ([]byte, error) { return queryOn(o.c.OpenStream, msg) }
func (o ourTicketConn) close()                           { _ = o.c.CloseWithError(0, "") }
func (o ourTicketConn) handshakeComplete() bool {
	select {
	case <-o.c.HandshakeComplete():
		return true
	default:
		return false
	}
}

func (o ourTicketConn) resumption() (bool, bool) {
	cs := o.c.ConnectionState()
	return cs.TLS.DidResume, cs.Used0RTT
}

type quicGoTicketConn struct{ c *quicgo.Conn }

func (q quicGoTicketConn) query(msg []byte) ([]byte, error) { return queryOn(q.c.OpenStream, msg) }
func (q quicGoTicketConn) close()                           { _ = q.c.CloseWithError(0, "") }
func (q quicGoTicketConn) handshakeComplete() bool {
	select {
	case <-q.c.HandshakeComplete():
		return true
	default:
		return false
	}
}

func (q quicGoTicketConn) resumption() (bool, bool) {
	cs := q.c.ConnectionState()
	return cs.TLS.DidResume, cs.Used0RTT
}

func queryOn[S rwStream](open func() (S, error), msg []byte) ([]byte, error) {
	st, err := open()
	if err != nil {
		return nil, err
	}
	if _, err := st.Write(msg); err != nil {
		return nil, err
	}
	_ = st.Close()
	return io.ReadAll(st)
}

// quicGoEchoListener starts quic-go's early listener at addr, echoing the
// first stream of each connection, until the test ends.
func (s *sim) quicGoEchoListener(ctx context.Context, addr netip.AddrPort, tlsConf *tls.Config, conf *quicgo.Config) net.Addr {
	s.t.Helper()
	ln, err := s.quicGoTransport(addr).ListenEarly(tlsConf, conf)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			go func() {
				st, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				data, _ := io.ReadAll(st)
				_, _ = st.Write(data)
				_ = st.Close()
			}()
		}
	}()
	return ln.Addr()
}

// TestZeroRTTRejectedCloseKeepsFreshTicket (issue 28): a client resumes
// with 0-RTT a ticket of a server that has since restarted with new ticket
// keys and a certificate chain of several datagrams. The client learns
// that the early data was rejected before its handshake completes, closes
// at once and dials again, as a DNS-over-QUIC proxy does; the new
// connection stores a fresh ticket, and the dial after that resumes with
// it and 0-RTT.
//
// crypto/tls removes the session a client was resuming from the
// ClientSessionCache when its handshake ends unfinished. Our client used
// to end it at teardown, after the closing period (three PTOs), which
// removed the fresh ticket the new connection had stored meanwhile under
// the same key. Now, as with quic-go, that happens when the connection
// closes. A retry with DialEarly used to resume the stale ticket and be
// rejected again; one with Dial completed, but its fresh ticket was
// deleted. The pairs with quic-go's client are the reference.
func TestZeroRTTRejectedCloseKeepsFreshTicket(t *testing.T) {
	for _, pair := range []struct {
		client, server string
		earlyRetry     bool // the retry dials with DialEarly, else with Dial
	}{
		{"ours", "ours", true}, {"ours", "quic-go", true}, {"quic-go", "ours", true},
		{"ours", "ours", false}, {"ours", "quic-go", false}, {"quic-go", "ours", false},
	} {
		name := pair.client + " client, " + pair.server + " server, retry with Dial"
		if pair.earlyRetry {
			name = pair.client + " client, " + pair.server + " server, retry with DialEarly"
		}
		t.Run(name, func(t *testing.T) {
			simTest(t, ticketLink, func(t *testing.T, s *sim) {
				ctx := s.ctx()
				before := serverTLS(t)
				before.SetSessionTicketKeys([][32]byte{{1}})
				restarted := serverTLS(t)
				restarted.Certificates = []tls.Certificate{longChainCert(t)}
				restarted.SetSessionTicketKeys([][32]byte{{2}})
				addrBefore := simServerAddr
				addrRestarted := netip.AddrPortFrom(simServerAddr.Addr(), 8443)
				var first, second net.Addr
				if pair.server == "ours" {
					for _, srv := range []struct {
						addr netip.AddrPort
						tls  *tls.Config
						to   *net.Addr
					}{{addrBefore, before, &first}, {addrRestarted, restarted, &second}} {
						tr := s.transport(srv.addr)
						earlyEchoServer(t, ctx, tr, &Config{Allow0RTT: true}, srv.tls)
						*srv.to = tr.Conn.LocalAddr()
					}
				} else {
					first = s.quicGoEchoListener(ctx, addrBefore, before, &quicgo.Config{Allow0RTT: true})
					second = s.quicGoEchoListener(ctx, addrRestarted, restarted, &quicgo.Config{Allow0RTT: true})
				}

				ctls, cache := resumingClientTLS(t)
				var dial func(to net.Addr, early bool) ticketTestConn
				if pair.client == "ours" {
					tr := s.transport(simClientAddr(1))
					dial = func(to net.Addr, early bool) ticketTestConn {
						d := tr.Dial
						if early {
							d = tr.DialEarly
						}
						c, err := d(ctx, to, ctls, nil)
						if err != nil {
							t.Fatal(err)
						}
						return ourTicketConn{c}
					}
				} else {
					tr := s.quicGoTransport(simClientAddr(1))
					dial = func(to net.Addr, early bool) ticketTestConn {
						d := tr.Dial
						if early {
							d = tr.DialEarly
						}
						c, err := d(ctx, to, ctls, nil)
						if err != nil {
							t.Fatal(err)
						}
						return quicGoTicketConn{c}
					}
				}

				c := dial(first, false)
				if _, err := c.query([]byte("for a ticket")); err != nil {
					t.Fatal(err)
				}
				waitSignal(t, ctx, cache.put, "session ticket")
				c.close()

				c = dial(second, true)
				if _, err := c.query([]byte("early query")); !errors.Is(err, Err0RTTRejected) && !errors.Is(err, quicgo.Err0RTTRejected) {
					t.Fatalf("early query to the restarted server: %v, want the 0-RTT rejection", err)
				}
				if c.handshakeComplete() {
					t.Fatal("the handshake completed before the rejection was seen: the scenario needs the server's flight to take longer")
				}
				c.close()

				c = dial(second, pair.earlyRetry)
				if got, err := c.query([]byte("retried query")); err != nil || string(got) != "retried query" {
					// A DialEarly retry that resumes the ticket the restart
					// made useless is rejected again.
					t.Fatalf("retried query: %q, %v", got, err)
				}
				waitSignal(t, ctx, cache.put, "fresh session ticket")
				c.close()
				// Past the closing period of the connection closed during its
				// handshake.
				time.Sleep(time.Second)

				c = dial(second, true)
				defer c.close()
				if got, err := c.query([]byte("next query")); err != nil || string(got) != "next query" {
					t.Fatalf("next query: %q, %v", got, err)
				}
				if resumed, used0RTT := c.resumption(); !resumed || !used0RTT {
					t.Fatalf("the dial after the retry: resumed %v, 0-RTT %v; want the fresh ticket used", resumed, used0RTT)
				}
			})
		})
	}
}
