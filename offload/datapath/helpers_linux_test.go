package datapath

import (
	"bytes"
	"crypto/rand"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/internal/testutil/initial"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/token"
)

// delivery is one datagram the Deliver callback received (copied).
type delivery struct {
	pkt      []byte
	from, to netip.AddrPort
}

// testEnv is a test network with a running datapath on the server end,
// a kernel UDP socket on the server port (what the QUIC stack would read)
// and a client socket connected to it.
type testEnv struct {
	*testNet
	dp        *Datapath
	kr        *token.KeyRing
	server    int // kernel socket on serverAP, in namespace S
	client    int // client socket on clientAP, in namespace C
	delivered chan delivery
}

func testKeyRing(tb testing.TB) *token.KeyRing {
	tb.Helper()
	return testutil.KeyRing(tb, testutil.Secret(0x40))
}

// newTestEnv builds the network (one queue per veth end) and starts the
// datapath; mod adjusts the config. The client socket's reads give up
// after clientTimeout.
func newTestEnv(tb testing.TB, mod func(*Config), clientTimeout time.Duration) *testEnv {
	return newTestEnvQueues(tb, 1, mod, clientTimeout)
}

// newTestEnvQueues is newTestEnv with queues queues per veth end.
func newTestEnvQueues(tb testing.TB, queues int, mod func(*Config), clientTimeout time.Duration) *testEnv {
	tb.Helper()
	env := &testEnv{testNet: newTestNet(tb, queues), kr: testKeyRing(tb), delivered: make(chan delivery, 16)}
	var mu sync.Mutex
	cfg := Config{
		Iface:   ifS,
		Port:    portS,
		KeyRing: env.kr,
		Deliver: func(pkt []byte, from, to netip.AddrPort) {
			mu.Lock()
			defer mu.Unlock()
			select {
			case env.delivered <- delivery{bytes.Clone(pkt), from, to}:
			default: // the test reads what it expects; never block the queue
			}
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	env.in(tb, env.nsS, func() {
		dp, err := Start(cfg)
		if loadRefused(err) {
			tb.Skipf("skipping: the kernel refuses the datapath here: %v", err)
		}
		if err != nil {
			tb.Fatalf("Start: %v", err)
		}
		tb.Cleanup(func() {
			if err := dp.Close(); err != nil {
				tb.Errorf("Close: %v", err)
			}
		})
		env.dp = dp
		env.server = udpSocket(tb, serverAP, netip.AddrPort{}, hangGuard)
	})
	env.in(tb, env.nsC, func() {
		env.client = udpSocket(tb, clientAP, serverAP, clientTimeout)
	})
	return env
}

// send writes one datagram from the client.
func (env *testEnv) send(tb testing.TB, pkt []byte) {
	tb.Helper()
	if _, err := unix.Write(env.client, pkt); err != nil {
		tb.Fatalf("client send: %v", err)
	}
}

// stats reads the datapath's counters.
func (env *testEnv) stats(tb testing.TB) Stats {
	tb.Helper()
	s, err := env.dp.Stats()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// waitStats polls Stats until ok holds (hang guard: hangGuard).
func (env *testEnv) waitStats(tb testing.TB, what string, ok func(Stats) bool) Stats {
	tb.Helper()
	return testutil.WaitValue(tb, what, hangGuard, func() Stats { return env.stats(tb) }, ok)
}

func randomCID(tb testing.TB, n int) []byte {
	tb.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// clientInitial returns a real, 1200-byte client Initial (no token) with
// a ClientHello from crypto/tls.
func clientInitial(tb testing.TB, dcid, scid []byte) []byte {
	tb.Helper()
	hello, err := flood.ClientHello(flood.DefaultServerName, flood.Version1, scid)
	if err != nil {
		tb.Fatal(err)
	}
	pkt, err := flood.AppendInitial(nil, flood.Version1, dcid, scid, hello)
	if err != nil {
		tb.Fatal(err)
	}
	return pkt
}

// initialWithToken is the client's Initial after a Retry (RFC 9000 section
// 8.1.2): DCID is the Retry's SCID, the token the Retry's, protected with
// keys derived from the new DCID, padded to 1200 bytes.
func initialWithToken(tb testing.TB, dcid, scid, tok []byte) []byte {
	tb.Helper()
	hello, err := flood.ClientHello(flood.DefaultServerName, flood.Version1, scid)
	if err != nil {
		tb.Fatal(err)
	}
	b := initial.Build(tb, initial.Packet{DCID: dcid, SCID: scid, Token: tok, Payload: wire.AppendCryptoFrame(nil, 0, hello), Size: 1200})
	if len(b) < 1200 {
		tb.Fatalf("Initial with token is %d bytes", len(b))
	}
	return b
}

// shortHeader returns a 1-RTT packet shape (fixed bit set) to dcid with
// some opaque payload: enough for the fast path to look up the DCID.
func shortHeader(dcid []byte, tag byte) []byte {
	p := append([]byte{0x40 | 0x01}, dcid...)
	for range 40 {
		p = append(p, tag)
	}
	return p
}

// checkRetry parses a Retry the client received for its Initial to odcid
// from scid, verifies its integrity tag and its token as agent-issued for
// the client's address, and returns the Retry's SCID and token.
func (env *testEnv) checkRetry(tb testing.TB, b, odcid, scid []byte) (rscid, tok []byte) {
	tb.Helper()
	var h wire.LongHeader
	if err := wire.ParseLongHeader(b, &h); err != nil {
		tb.Fatalf("reply is not a long header: %v (% x)", err, b[:min(len(b), 32)])
	}
	if h.Type != wire.PacketTypeRetry || h.Version != wire.Version1 {
		tb.Fatalf("reply type %v version %v, want a v1 Retry", h.Type, h.Version)
	}
	if !bytes.Equal(h.DestConnID, scid) {
		tb.Fatalf("Retry DCID %x, want the client's SCID %x", h.DestConnID, scid)
	}
	if err := handshake.VerifyRetryIntegrityTag(b, handshake.Version1, odcid); err != nil {
		tb.Fatalf("Retry integrity tag: %v", err)
	}
	v, err := env.kr.NewValidator(token.ValidatorConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := v.Validate(h.Token, token.TypeRetry, clientAP, time.Now(), nil)
	if err != nil {
		tb.Fatalf("Retry token does not validate for %v: %v", clientAP, err)
	}
	if res.Source != token.SourceAgent || !bytes.Equal(res.ODCID, odcid) || !bytes.Equal(res.RSCID, h.SrcConnID) {
		tb.Fatalf("token source %v ODCID %x RSCID %x; want agent, %x, %x", res.Source, res.ODCID, res.RSCID, odcid, h.SrcConnID)
	}
	return bytes.Clone(h.SrcConnID), bytes.Clone(h.Token)
}
