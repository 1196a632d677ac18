//go:build linux

package abuse

import (
	"crypto/rand"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/udpio"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// BenchmarkFloodOverPrefixRate is issue 27's host-only figure: what the
// real server (`turboretry serve`, admission by source prefix on, burst 1
// per prefix, taken by one benign fetch first, and a refill of one per
// 100 s) spends per Initial of a prefix over its rate,
// when nothing in front of it sheds them. Every flood Initial carries a
// new_token token the server issued for the attacker's address (minted
// with the server's secret: the attacker holds real addresses and real
// tokens), so the server checks the token (a returning client may use
// the reserve) before it refuses with CONNECTION_REFUSED (prefix_rate).
// It reports the server's CPU time (utime+stime from /proc) per flood
// datagram, the kernel's receive and send paths included. The fast
// path's figure for the same packets is offload/xdp's
// BenchmarkInitialOverPrefixRate (docs/abuse.md has both).
func BenchmarkFloodOverPrefixRate(b *testing.B) {
	const pool = 4096
	secret, err := token.GenerateSecret()
	if err != nil {
		b.Fatal(err)
	}
	secretFile := filepath.Join(b.TempDir(), "secret.key")
	if err := os.WriteFile(secretFile, []byte(token.FormatSecret(secret)), 0o600); err != nil {
		b.Fatal(err)
	}
	kr, err := token.NewKeyRing(secret, token.DefaultRotation)
	if err != nil {
		b.Fatal(err)
	}
	iss, err := kr.NewIssuer(token.SourceHost)
	if err != nil {
		b.Fatal(err)
	}
	s := startServer(b, "--secret", secretFile, "--prefix-admission=true", "--prefix-rate", "0.01", "--prefix-burst", "1")
	// The benign client, on the attacker's loopback /24, takes its only
	// token: from then on every Initial of the /24 is over the rate.
	if err := benignFetch(b.Context(), s, 0, "", nil); err != nil {
		b.Fatal(err)
	}
	to, err := net.ResolveUDPAddr("udp", s.addr)
	if err != nil {
		b.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pc.Close() })
	_ = pc.SetReadBuffer(4 << 20)
	a := &floodAttack{pc: pc, server: to, index: map[string]int{}, got: make(chan struct{}, 1)}
	client := netip.MustParseAddr("127.0.0.1")
	for i := range pool {
		dcid, scid := make([]byte, 8), make([]byte, 8)
		_, _ = rand.Read(dcid)
		_, _ = rand.Read(scid)
		tok, err := iss.AppendNewToken(nil, client, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		a.index[string(scid)] = i
		a.pkts = append(a.pkts, tokenInitial(dcid, scid, tok))
		a.first = append(a.first, answerNone)
		a.connected = append(a.connected, false)
	}
	go a.read()

	const batch = 32
	w, err := udpio.NewWriter(pc, udpio.WriterConfig{Batch: batch})
	if err != nil {
		b.Fatal(err)
	}
	answered := func() int {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.allAnswers
	}
	refused0 := s.scrape()[series("turboretry_quic_refused_total", "reason", "prefix_rate")]
	cpu0 := s.cpu()
	b.ResetTimer()
	sent := a.floodWindowed(b, w, batch, answered, func(i int) udpio.Message {
		return udpio.Message{Buf: a.pkts[i%pool], Addr: to.AddrPort()}
	})
	b.StopTimer()
	cpu := s.cpu() - cpu0
	refused := s.scrape()[series("turboretry_quic_refused_total", "reason", "prefix_rate")] - refused0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(sent), "server-cpu-ns/pkt")
	b.ReportMetric(100*refused/float64(sent), "%prefix_rate")
}

// tokenInitial is a client Initial of 1200 bytes carrying tok. Its payload
// is not protected: the server refuses it before it would decrypt.
func tokenInitial(dcid, scid, tok []byte) []byte {
	h := wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: dcid, SrcConnID: scid, Token: tok}
	b := wire.AppendLongHeader(nil, &h, 4, 2)
	lenOff, pnOff := len(b)-2, len(b)
	b = wire.AppendPacketNumber(b, 0, 4)
	for len(b) < 1200 {
		b = append(b, 0)
	}
	wire.PutVarintWithLen(b[lenOff:], uint64(len(b)-pnOff), 2)
	return b
}
