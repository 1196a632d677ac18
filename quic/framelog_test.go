package quic

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/testutil/coalesced"
	"github.com/turboretry/turboretry/internal/wire"
)

// frameLog records the datagrams a client and its server send each other
// on the harness, and decodes their 1-RTT packets with the traffic
// secrets from the client's TLS key log, so a test can check which frames
// went out, when, and under which key phase.
type frameLog struct {
	client netip.AddrPort

	mu     sync.Mutex
	keyLog bytes.Buffer
	sent   []loggedDatagram
}

type loggedDatagram struct {
	at   time.Time
	from netip.AddrPort
	data []byte
}

// loggedPacket is one decoded 1-RTT packet.
type loggedPacket struct {
	at       time.Time
	size     int // of the datagram
	pn       uint64
	keyPhase bool
	frames   []wire.Frame
}

// has reports whether the packet carries a frame of type ft.
func (p *loggedPacket) has(ft wire.FrameType) bool {
	return slices.ContainsFunc(p.frames, func(f wire.Frame) bool { return f.Type == ft })
}

// logFrames starts recording the traffic of the client at client, whose
// TLS configuration ctls it makes write a key log.
func (s *sim) logFrames(client netip.AddrPort, ctls *tls.Config) *frameLog {
	l := &frameLog{client: client}
	ctls.KeyLogWriter = l
	s.tap(func(p *simnet.Packet) bool {
		if p.From == client || p.To == client {
			l.mu.Lock()
			l.sent = append(l.sent, loggedDatagram{time.Now(), p.From, slices.Clone(p.Data)})
			l.mu.Unlock()
		}
		return true
	})
	return l
}

// Write takes the key log.
func (l *frameLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keyLog.Write(b)
}

// secret returns a secret of the key log by its label.
func (l *frameLog) secret(t *testing.T, label string) []byte {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(l.keyLog.Bytes()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == label {
			b, err := hex.DecodeString(f[2])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no %s in the key log", label)
	return nil
}

// packets decodes the 1-RTT packets that the client (fromClient) or the
// server sent, in order; c is a connection of the pair, for the cipher
// suite and version, and cidLen the length of the connection IDs those
// packets carry.
func (l *frameLog) packets(t *testing.T, c *Conn, fromClient bool, cidLen int) []loggedPacket {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := c.ConnectionState()
	keys, err := handshake.NewAppKeys(st.TLS.CipherSuite, handshake.Version(st.Version))
	if err != nil {
		t.Fatal(err)
	}
	recv, send := "SERVER_TRAFFIC_SECRET_0", "CLIENT_TRAFFIC_SECRET_0"
	if fromClient {
		recv, send = send, recv
	}
	// Both secrets are needed to follow key updates.
	if err := keys.SetRecvSecret(l.secret(t, recv)); err != nil {
		t.Fatal(err)
	}
	if err := keys.SetSendSecret(l.secret(t, send)); err != nil {
		t.Fatal(err)
	}
	var out []loggedPacket
	largest := int64(-1)
	for _, d := range l.sent {
		if (d.from == l.client) != fromClient {
			continue
		}
		for pkt, err := range coalesced.Packets(slices.Clone(d.data)) {
			if err != nil || wire.IsLongHeader(pkt[0]) {
				continue
			}
			// An observer of one direction does not see the ACKs that
			// allow the next update: let the keys follow every update.
			keys.OnAckSent(math.MaxUint64)
			payload, pn, _, err := keys.UnprotectPacket(pkt, 1+cidLen, largest)
			if err != nil {
				t.Fatalf("1-RTT packet of %d bytes at %v: %v", len(pkt), d.at, err)
			}
			largest = max(largest, int64(pn))
			p := loggedPacket{at: d.at, size: len(d.data), pn: pn, keyPhase: pkt[0]&handshake.KeyPhaseBit != 0}
			for len(payload) > 0 {
				var f wire.Frame
				n, err := wire.ParseFrame(payload, &f)
				if err != nil {
					t.Fatalf("packet %d: %v", pn, err)
				}
				p.frames = append(p.frames, f)
				payload = payload[n:]
			}
			out = append(out, p)
		}
	}
	return out
}
