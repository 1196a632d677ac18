package quic

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/wire"
)

// probeEchoBytes is the echo of TestPTOProbeCarriesOldestDataWhole: with
// its headers it fits in one base-size datagram, but not together with
// the control frames a server sends when the handshake completes.
const probeEchoBytes = 1024

// isShortHeaderDatagram reports whether a datagram starts with a 1-RTT
// packet.
func isShortHeaderDatagram(d []byte) bool { return len(d) > 0 && d[0]&0x80 == 0 }

// TestPTOProbeCarriesOldestDataWhole: every 1-RTT datagram of the server
// is lost from the handshake on, its HANDSHAKE_DONE, NEW_TOKEN and
// NEW_CONNECTION_ID frames and its echo of the client's 1 KB request
// included, and nothing of the client's reaches it afterwards, so only
// the server's PTO sends again. Each of its two probe datagrams must
// carry the whole echo (RFC 9002 6.2.4: the oldest data, which fits in
// one datagram), the control frames where they fit: a probe that splits
// the echo over two datagrams needs both through, where either one would
// do.
func TestPTOProbeCarriesOldestDataWhole(t *testing.T) {
	simTest(t, lossyHandshakeLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		ctls := clientTLS(t)
		frames := s.logFrames(simClientAddr(1), ctls)
		var (
			mu             sync.Mutex
			echoLostAt     time.Time // when the server's echo was dropped
			sentAfterwards int       // server datagrams since then
		)
		s.tap(func(p *simnet.Packet) bool {
			mu.Lock()
			defer mu.Unlock()
			fromServer := p.From == simServerAddr
			switch {
			case echoLostAt.IsZero():
				if !fromServer || !isShortHeaderDatagram(p.Data) {
					return true
				}
				if len(p.Data) > probeEchoBytes {
					echoLostAt = time.Now()
				}
				return false
			case fromServer:
				sentAfterwards++
				return true
			}
			// The client's packets stay lost until the server's first
			// PTO has sent its two probes.
			return sentAfterwards >= 2
		})
		c := s.dialTLS(simClientAddr(1), srv.addr, ctls, nil)
		if err := echoErr(s.ctx(), c, c.OpenStreamSync, probeEchoBytes); err != nil {
			t.Fatal(err)
		}

		mu.Lock()
		lostAt := echoLostAt
		mu.Unlock()
		var probes []loggedPacket
		for _, p := range frames.packets(t, c, false, defaultConnIDLength) {
			if p.at.After(lostAt) && len(probes) < 2 {
				probes = append(probes, p)
			}
		}
		for i, p := range probes {
			t.Logf("probe %d: %d-byte datagram: %s", i+1, p.size, describeFrames(p.frames))
		}
		if len(probes) != 2 {
			t.Fatalf("%d packets from the server after its echo was lost, want two probes", len(probes))
		}
		if !probes[0].has(wire.FrameTypeHandshakeDone) && !probes[1].has(wire.FrameTypeHandshakeDone) {
			t.Error("neither probe carries the HANDSHAKE_DONE frame")
		}
		for i, p := range probes {
			whole := false
			for _, f := range p.frames {
				if f.Type == wire.FrameTypeStream && f.Offset == 0 && len(f.Data) == probeEchoBytes && f.Fin {
					whole = true
				}
			}
			if !whole {
				t.Errorf("probe %d (%d bytes) does not carry the whole echo", i+1, p.size)
			}
		}
	})
}

// describeFrames lists frames by type, with the range of STREAM frames.
func describeFrames(fs []wire.Frame) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		if f.Type == wire.FrameTypeStream {
			fmt.Fprintf(&b, "STREAM(%d, %d+%d, fin %v)", f.StreamID, f.Offset, len(f.Data), f.Fin)
		} else {
			b.WriteString(f.Type.String())
		}
	}
	return b.String()
}
