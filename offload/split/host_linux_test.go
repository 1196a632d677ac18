package split

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testcert"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

const testALPN = "trsplit"

// hostServer is the QUIC echo server in the host namespace, announcing
// every connection ID it routes to the agent.
type hostServer struct {
	tr  *quic.Transport
	ann *announce.Announcer

	mu   sync.Mutex
	cids [][]byte // every 8-byte ID the transport announced
}

// startHost starts the server. It sends a Retry to every Initial without a
// valid token (quic.AlwaysRetry), so a token-less Initial that got past the
// agent would show up as a host Retry.
func startHost(tb testing.TB, e *emulation, root []byte, kr *token.KeyRing) *hostServer {
	tb.Helper()
	return startHostEvery(tb, e, root, kr, 0)
}

// startHostEvery is startHost re-announcing every ID each interval (0:
// announce.DefaultInterval).
func startHostEvery(tb testing.TB, e *emulation, root []byte, kr *token.KeyRing, interval time.Duration) *hostServer {
	tb.Helper()
	h := &hostServer{}
	in(tb, e.host, func() error {
		udp, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(serverAP))
		if err != nil {
			return err
		}
		h.tr = &quic.Transport{
			Conn:               udp,
			ConnectionIDLength: 8,
			AddressValidation:  &quic.AddressValidationConfig{Policy: quic.AlwaysRetry(), TokenSecret: root},
		}
		// The announcer's socket is opened here, in the host namespace.
		h.ann, err = announce.NewAnnouncer(announce.AnnouncerConfig{
			Agent:    controlAP,
			Key:      announce.Key(kr),
			CIDLen:   8,
			Interval: interval,
			Active:   h.tr.ConnectionIDs,
		})
		if err != nil {
			udp.Close()
			return err
		}
		h.tr.ConnectionIDAdded = func(cid []byte) {
			h.ann.Add(cid)
			if len(cid) == 8 {
				h.mu.Lock()
				h.cids = append(h.cids, bytes.Clone(cid))
				h.mu.Unlock()
			}
		}
		return nil
	})
	ln, err := h.tr.Listen(&tls.Config{Certificates: []tls.Certificate{testcert.Certificate(tb)}, NextProtos: []string{testALPN}},
		&quic.Config{MaxIdleTimeout: 30 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { serveEcho(ctx, ln) })
	tb.Cleanup(func() {
		cancel()
		_ = ln.Close()
		_ = h.tr.Close()
		_ = h.tr.Conn.Close()
		_ = h.ann.Close()
		wg.Wait()
	})
	return h
}

// serveEcho echoes every stream of every connection.
func serveEcho(ctx context.Context, ln *quic.Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		wg.Go(func() {
			for {
				s, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				_, _ = io.Copy(s, s)
				_ = s.Close()
			}
		})
	}
}

// announced returns the IDs the host announced so far.
func (h *hostServer) announced() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.cids...)
}

// echo dials the host from the client namespace with our QUIC client
// (which follows a Retry), echoes msg over a stream and returns the
// connection, still open.
func echo(tb testing.TB, e *emulation, msg string) *quic.Conn {
	tb.Helper()
	var udp *net.UDPConn
	in(tb, e.client, func() error {
		var err error
		udp, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ipClient, 0)))
		return err
	})
	tb.Cleanup(func() { udp.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c, err := quic.Dial(ctx, udp, net.UDPAddrFromAddrPort(serverAP),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{testALPN}},
		&quic.Config{HandshakeIdleTimeout: hangGuard, MaxIdleTimeout: 30 * time.Second})
	if err != nil {
		tb.Fatalf("dial through the agent: %v", err)
	}
	tb.Cleanup(func() { _ = c.CloseWithError(0, "") })
	echoOn(tb, c, msg)
	return c
}

// echoOn echoes msg over a new stream of c.
func echoOn(tb testing.TB, c *quic.Conn, msg string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		tb.Fatalf("open stream: %v", err)
	}
	_ = s.SetDeadline(time.Now().Add(hangGuard))
	if _, err := s.Write([]byte(msg)); err != nil {
		tb.Fatalf("write: %v", err)
	}
	_ = s.Close()
	got, err := io.ReadAll(s)
	if err != nil || string(got) != msg {
		tb.Fatalf("echo: %q, %v; want %q", got, err, msg)
	}
}

// waitStats polls get until done accepts its value and returns that
// value; it fails with the last value after hangGuard.
func waitStats[S any](tb testing.TB, what string, get func() S, done func(S) bool) S {
	tb.Helper()
	return testutil.WaitValue(tb, what, hangGuard, get, done)
}

// xdpLine reports whether ip -d link output shows an XDP program.
func xdpLine(out string) bool { return strings.Contains(out, "prog/xdp") }
