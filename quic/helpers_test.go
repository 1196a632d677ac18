package quic

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

const testALPN = "turboretry-test"

var (
	certOnce sync.Once
	testCert tls.Certificate
	testPool *x509.CertPool
)

func loadTestCert(t testing.TB) {
	certOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		// Valid in real time and in the virtual time of synctest bubbles,
		// which starts at 2000-01-01.
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "localhost"},
			DNSNames:              []string{"localhost"},
			IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
			NotBefore:             time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC),
			NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
			BasicConstraintsValid: true,
			IsCA:                  true,
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			panic(err)
		}
		testCert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
		testPool = x509.NewCertPool()
		testPool.AddCert(cert)
	})
}

func serverTLS(t testing.TB) *tls.Config {
	loadTestCert(t)
	return &tls.Config{Certificates: []tls.Certificate{testCert}, NextProtos: []string{testALPN}}
}

func clientTLS(t testing.TB) *tls.Config {
	loadTestCert(t)
	return &tls.Config{RootCAs: testPool, ServerName: "localhost", NextProtos: []string{testALPN}}
}

// testCtx is a hang guard, not a timing assertion.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listenUDP(t testing.TB) *net.UDPConn {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connCause returns the close error of one of our or quic-go's connections.
func connCause(c interface{ Context() context.Context }) error {
	return context.Cause(c.Context())
}

func afterMs(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }

// serveStreams accepts connections with accept until it fails (ctx ended or
// the listener closed) and runs handle in its own goroutine for every
// bidirectional stream each connection opens. It serves quic-go listeners
// as well as ours.
func serveStreams[S any, C interface {
	AcceptStream(context.Context) (S, error)
}](ctx context.Context, accept func(context.Context) (C, error), handle func(S)) {
	go func() {
		for {
			c, err := accept(ctx)
			if err != nil {
				return
			}
			go func() {
				for {
					s, err := c.AcceptStream(ctx)
					if err != nil {
						return
					}
					go handle(s)
				}
			}()
		}
	}()
}

// echo copies what s reads back to it, then closes its send side.
func echo(s io.ReadWriteCloser) {
	_, _ = io.Copy(s, s)
	_ = s.Close()
}

// echoServer is an echo listener that records the connections it accepts.
type echoServer struct {
	tr   *Transport
	addr *net.UDPAddr
	// accepted has every connection accepted, in order (buffered: the
	// server does not wait for a reader).
	accepted chan *Conn

	mu    sync.Mutex
	conns []*Conn
}

// serveEcho listens on tr and echoes every stream of every connection
// until ctx ends or tr closes.
func serveEcho(t testing.TB, ctx context.Context, tr *Transport, conf *Config) *echoServer {
	t.Helper()
	ln, err := tr.Listen(serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{tr: tr, addr: ln.Addr().(*net.UDPAddr), accepted: make(chan *Conn, 64)}
	serveStreams(ctx, func(ctx context.Context) (*Conn, error) {
		c, err := ln.Accept(ctx)
		if err == nil {
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.accepted <- c
		}
		return c, err
	}, func(st *Stream) { echo(st) })
	return s
}

// only returns the one connection the server accepted.
func (s *echoServer) only(t testing.TB) *Conn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 1 {
		t.Fatalf("the server accepted %d connections, want 1", len(s.conns))
	}
	return s.conns[0]
}

// next waits for the next connection the server accepts.
func (s *echoServer) next(t testing.TB, ctx context.Context) *Conn {
	t.Helper()
	select {
	case c := <-s.accepted:
		return c
	case <-ctx.Done():
		t.Fatal("the server accepted no connection")
		return nil
	}
}
