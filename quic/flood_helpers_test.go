package quic

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/wire"
)

// completeInitial returns a client's first Initial as a real client sends
// it: a complete ClientHello from crypto/tls's QUIC client (X25519 only, so
// it fits one datagram; our ALPN and server name, transport parameters
// naming scid) in a CRYPTO frame, padded to 1200 bytes, protected with the
// Initial keys of dcid. Our server carries it to 0.5-RTT: unlike a
// re-protected copy of one ClientHello, whose initial_source_connection_id
// no longer matches, nothing makes its handshake fail early.
func completeInitial(tb testing.TB, dcid, scid []byte) []byte {
	tb.Helper()
	tp := wire.DefaultTransportParameters()
	tp.InitialMaxData = 1 << 20
	tp.InitialMaxStreamDataBidiLocal = 1 << 18
	tp.InitialMaxStreamDataBidiRemote = 1 << 18
	tp.InitialMaxStreamDataUni = 1 << 18
	tp.InitialMaxStreamsBidi = 100
	tp.InitialMaxStreamsUni = 100
	tp.InitialSourceConnectionID = scid
	tp.HasInitialSourceConnectionID = true
	params, err := tp.Marshal(nil, PerspectiveClient)
	if err != nil {
		tb.Fatal(err)
	}
	conf := clientTLS(tb)
	conf.MinVersion = tls.VersionTLS13
	conf.CurvePreferences = []tls.CurveID{tls.X25519}
	qc := tls.QUICClient(&tls.QUICConfig{TLSConfig: conf})
	defer qc.Close()
	qc.SetTransportParameters(params)
	if err := qc.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	var hello []byte
	for ev := qc.NextEvent(); ev.Kind != tls.QUICNoEvent; ev = qc.NextEvent() {
		if ev.Kind == tls.QUICWriteData && ev.Level == tls.QUICEncryptionLevelInitial {
			hello = append(hello, ev.Data...)
		}
	}
	pkt := buildClientInitialWith(tb, dcid, scid, nil, wire.AppendCryptoFrame(nil, 0, hello), minInitialSize)
	if len(pkt) != minInitialSize {
		tb.Fatalf("ClientHello of %d bytes does not fit one Initial", len(hello))
	}
	return pkt
}

// floodInitials returns n complete Initials with fresh connection IDs and
// their DCIDs; the SCID of Initial i starts with its index, so answers can
// be matched.
func floodInitials(tb testing.TB, n int) (pkts, dcids [][]byte) {
	tb.Helper()
	pkts, dcids = make([][]byte, n), make([][]byte, n)
	for i := range pkts {
		dcid, scid := make([]byte, 8), make([]byte, 8)
		_, _ = rand.Read(dcid)
		_, _ = rand.Read(scid[4:])
		scid[0], scid[1], scid[2], scid[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
		pkts[i], dcids[i] = completeInitial(tb, dcid, scid), dcid
	}
	return pkts, dcids
}

// answerKind is how the server answered one flood Initial first.
type answerKind uint8

const (
	answerNone      answerKind = iota
	answerRetry                // a Retry: no state
	answerHandshake            // the server's handshake flight: a connection
	answerClose                // an Initial with CONNECTION_CLOSE: refused statelessly
)

// floodAnswers records, by flood index, the first answer the server sent.
type floodAnswers struct {
	mu     sync.Mutex
	kinds  []answerKind
	closes []TransportErrorCode // the code of each answerClose
	got    chan struct{}        // one value per first answer
}

// countOf returns how many Initials got kind k.
func (a *floodAnswers) countOf(k answerKind) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, got := range a.kinds {
		if got == k {
			n++
		}
	}
	return n
}

// readFloodAnswers reads the server's answers on pc until it closes. The
// attacker never answers back: it only classifies what arrives, decrypting
// server Initials with the keys the flood Initial's DCID gives (dcids).
func readFloodAnswers(pc net.PacketConn, dcids [][]byte) *floodAnswers {
	a := &floodAnswers{kinds: make([]answerKind, len(dcids)), closes: make([]TransportErrorCode, len(dcids)), got: make(chan struct{}, len(dcids))}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var hdr wire.LongHeader
			if n == 0 || !wire.IsLongHeader(buf[0]) || wire.ParseLongHeader(buf[:n], &hdr) != nil || len(hdr.DestConnID) != 8 {
				continue
			}
			d := hdr.DestConnID
			i := int(d[0])<<24 | int(d[1])<<16 | int(d[2])<<8 | int(d[3])
			if i < 0 || i >= len(dcids) {
				continue
			}
			kind, code := answerHandshake, TransportErrorCode(0)
			switch hdr.Type {
			case wire.PacketTypeRetry:
				kind = answerRetry
			case wire.PacketTypeInitial:
				if c, ok := initialClose(buf[:hdr.PacketLen], &hdr, dcids[i]); ok {
					kind, code = answerClose, c
				}
			}
			a.mu.Lock()
			first := a.kinds[i] == answerNone
			if first {
				a.kinds[i], a.closes[i] = kind, code
			}
			a.mu.Unlock()
			if first {
				a.got <- struct{}{}
			}
		}
	}()
	return a
}

// initialClose decrypts a server Initial sent to a client whose first DCID
// was dcid and returns the error code of its CONNECTION_CLOSE, if any.
func initialClose(pkt []byte, hdr *wire.LongHeader, dcid []byte) (TransportErrorCode, bool) {
	_, opener, err := handshake.NewInitialKeys(dcid, handshake.Version1, true)
	if err != nil {
		return 0, false
	}
	payload, _, err := opener.UnprotectPacket(append([]byte(nil), pkt...), hdr.PNOffset, -1)
	if err != nil {
		return 0, false
	}
	var f wire.Frame
	for len(payload) > 0 {
		n, err := wire.ParseFrame(payload, &f)
		if err != nil {
			return 0, false
		}
		payload = payload[n:]
		if f.Type == wire.FrameTypeConnectionClose {
			return TransportErrorCode(f.ErrorCode), true
		}
	}
	return 0, false
}

// sendFlood sends pkts to the server from pc, never more than
// window unanswered at a time, so the server's socket never overflows and
// every Initial gets its answer: the flood is counted, not timed. An
// Initial left unanswered for a second (the bound is a hang guard) stops
// being waited for.
func sendFlood(t *testing.T, pc net.PacketConn, server net.Addr, pkts [][]byte, a *floodAnswers) {
	t.Helper()
	const window = 32
	outstanding := 0
	for _, pkt := range pkts {
		for outstanding >= window {
			select {
			case <-a.got:
				outstanding--
			case <-time.After(time.Second):
				outstanding--
			}
		}
		if _, err := pc.WriteTo(pkt, server); err != nil {
			t.Fatal(err)
		}
		outstanding++
	}
	for ; outstanding > 0; outstanding-- {
		select {
		case <-a.got:
		case <-time.After(time.Second):
		}
	}
}
