package quic

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/internal/wire"
)

// refusalHeader returns the header of a client's first Initial with the
// given connection IDs, as Examine parses it.
func refusalHeader(tb testing.TB, r *stateless.Responder, dcid, scid []byte) *wire.LongHeader {
	tb.Helper()
	var hdr wire.LongHeader
	pkt := buildClientInitial(tb, dcid, scid, nil, minInitialSize)
	if o, _ := r.Examine(pkt, &hdr, nil); o != stateless.Initial {
		tb.Fatalf("Examine: %v", o)
	}
	return &hdr
}

func mustResponder(tb testing.TB) *stateless.Responder {
	tb.Helper()
	r, err := stateless.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestRefusalCloseResent: the second Initial of a refused attempt gets the
// bytes of the first one's close, copied without a key derivation (no
// allocation, the sealed count unchanged); another DCID, another SCID or
// another code gets a close of its own, each one the client can open.
func TestRefusalCloseResent(t *testing.T) {
	r := mustResponder(t)
	var c refusalCloses
	dcid, scid := []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 9, 9, 9}
	hdr := refusalHeader(t, r, dcid, scid)

	first, err := c.appendClose(nil, r, hdr, ConnectionRefused)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := r.AppendClose(nil, hdr, &qerr.TransportError{Code: qerr.ConnectionRefused})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, fresh) {
		t.Fatal("the first close differs from AppendClose's")
	}
	buf := make([]byte, 0, 2048)
	again, err := c.appendClose(buf, r, hdr, ConnectionRefused)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, first) {
		t.Fatal("the attempt's second Initial got other close bytes")
	}
	if sealed, resent := c.counts(); sealed != 1 || resent != 1 {
		t.Fatalf("sealed %d, resent %d; want 1 and 1", sealed, resent)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := c.appendClose(buf[:0], r, hdr, ConnectionRefused); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per repeated refusal", n)
	}
	if sealed, _ := c.counts(); sealed != 1 {
		t.Fatalf("repeated refusals sealed %d closes, want 1", sealed)
	}

	others := []struct {
		name       string
		dcid, scid []byte
		code       TransportErrorCode
	}{
		{"another DCID", []byte{1, 2, 3, 4, 5, 6, 7, 9}, scid, ConnectionRefused},
		{"a longer DCID", append(bytes.Clone(dcid), 0), scid, ConnectionRefused},
		{"another SCID", dcid, []byte{9, 9, 9, 8}, ConnectionRefused},
		{"an empty SCID", dcid, nil, ConnectionRefused},
		{"another code", dcid, scid, InvalidToken},
	}
	seen := [][]byte{first}
	for i, o := range others {
		h := refusalHeader(t, r, o.dcid, o.scid)
		got, err := c.appendClose(nil, r, h, o.code)
		if err != nil {
			t.Fatal(err)
		}
		if sealed, _ := c.counts(); sealed != uint64(2+i) {
			t.Errorf("%s: %d closes sealed, want %d", o.name, sealed, 2+i)
		}
		for _, s := range seen {
			if bytes.Equal(got, s) {
				t.Errorf("%s got an earlier attempt's close", o.name)
			}
		}
		seen = append(seen, got)
		var ch wire.LongHeader
		if err := wire.ParseLongHeader(got, &ch); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ch.DestConnID, o.scid) || !bytes.Equal(ch.SrcConnID, o.dcid) {
			t.Errorf("%s: close to %x from %x", o.name, ch.DestConnID, ch.SrcConnID)
		}
		if code, ok := initialClose(got, &ch, o.dcid); !ok || code != o.code {
			t.Errorf("%s: the client reads %v %v, want %v", o.name, code, ok, o.code)
		}
	}
	// The first attempt's close is still there, and still its own.
	if got, _ := c.appendClose(nil, r, hdr, ConnectionRefused); !bytes.Equal(got, first) {
		t.Error("the first attempt's close changed")
	}
}

// TestRefusalClosesBounded: nothing is allocated before the first
// refusal; a spray of 100 000 attempts with distinct DCIDs leaves the
// table where it was, the heap where it was, and the attempts refused
// last answered from it.
func TestRefusalClosesBounded(t *testing.T) {
	const spray = 100_000
	var c refusalCloses
	if c.slots != nil {
		t.Fatal("a table before any refusal")
	}
	r := mustResponder(t)
	hdr := &wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: make([]byte, 8), SrcConnID: []byte{1, 2, 3, 4}}
	buf := make([]byte, 0, 2048)
	if _, err := c.appendClose(buf, r, hdr, ConnectionRefused); err != nil {
		t.Fatal(err)
	}
	table := c.slots
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range spray {
		binary.BigEndian.PutUint64(hdr.DestConnID, uint64(i+1))
		if _, err := c.appendClose(buf[:0], r, hdr, ConnectionRefused); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if c.slots != table {
		t.Fatal("the table was replaced")
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 256<<10 {
		t.Errorf("the heap grew by %d bytes over the spray", grown)
	}
	if sealed, resent := c.counts(); sealed != spray+1 || resent != 0 {
		t.Errorf("sealed %d, resent %d; want %d and 0", sealed, resent, spray+1)
	}
	// The last attempt is answered from the table.
	if _, err := c.appendClose(buf[:0], r, hdr, ConnectionRefused); err != nil {
		t.Fatal(err)
	}
	if _, resent := c.counts(); resent != 1 {
		t.Error("the last attempt's close was not kept")
	}
	if size := unsafe.Sizeof(*table); size != refusalClosesBytes {
		t.Errorf("the table holds %d bytes, refusalClosesBytes says %d", size, refusalClosesBytes)
	}
	t.Logf("the table: %d slots, %d bytes", refusalCloseSlots, refusalClosesBytes)
}

// TestRefusalClosesConcurrent: the read loop and InjectDatagram callers
// refuse at once; every answer is its own attempt's close, also for
// attempts sharing a slot (twice as many as slots; run with -race).
func TestRefusalClosesConcurrent(t *testing.T) {
	r := mustResponder(t)
	var c refusalCloses
	const attempts = 2 * refusalCloseSlots
	hdrs := make([]*wire.LongHeader, attempts)
	want := make([][]byte, attempts)
	for i := range hdrs {
		hdrs[i] = &wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: []byte{byte(i >> 8), byte(i), 2, 3, 4, 5, 6, 7}, SrcConnID: []byte{byte(i)}}
		var err error
		if want[i], err = r.AppendClose(nil, hdrs[i], &qerr.TransportError{Code: qerr.ConnectionRefused}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			buf := make([]byte, 0, 2048)
			// Each attempt twice in a row: the second mostly a hit.
			for k := range 2 * attempts {
				i := (k/2*7 + g*attempts/4) % attempts
				got, err := c.appendClose(buf[:0], r, hdrs[i], ConnectionRefused)
				if err != nil || !bytes.Equal(got, want[i]) {
					t.Errorf("attempt %d got another close (%v)", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, resent := c.counts(); resent == 0 {
		t.Error("no close was resent")
	}
}

// TestRefusedAttemptSealedOnce: through a listener, the two Initials of
// one refused attempt get byte-identical closes for one key derivation,
// another attempt gets its own, and every refused Initial is counted.
func TestRefusedAttemptSealedOnce(t *testing.T) {
	tr := &Transport{Conn: listenUDP(t)}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), &Config{MaxHandshakes: 1, HandshakeIdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	server := tr.Conn.LocalAddr()
	holder, attacker := listenUDP(t), listenUDP(t)
	if _, err := holder.WriteTo(completeInitial(t, []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte{0, 0, 0, 1}), server); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the handshake slot taken", func() bool { return tr.Stats().Handshaking == 1 })

	refusal := func(dcid, scid []byte) []byte {
		t.Helper()
		if _, err := attacker.WriteTo(completeInitial(t, dcid, scid), server); err != nil {
			t.Fatal(err)
		}
		_ = attacker.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 2048)
		n, _, err := attacker.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		var hdr wire.LongHeader
		if err := wire.ParseLongHeader(buf[:n], &hdr); err != nil {
			t.Fatal(err)
		}
		if code, ok := initialClose(buf[:n], &hdr, dcid); !ok || code != ConnectionRefused || !bytes.Equal(hdr.DestConnID, scid) {
			t.Fatalf("answer to %x: %v %v to %x, want CONNECTION_REFUSED", dcid, code, ok, hdr.DestConnID)
		}
		return buf[:n]
	}
	dcid, scid := []byte{7, 7, 7, 7, 7, 7, 7, 7}, []byte{0, 0, 0, 2}
	first := refusal(dcid, scid)
	second := refusal(dcid, scid)
	other := refusal([]byte{7, 7, 7, 7, 7, 7, 7, 8}, scid)
	if !bytes.Equal(first, second) {
		t.Error("the attempt's two Initials got different closes")
	}
	if bytes.Equal(first, other) {
		t.Error("another DCID got the first attempt's close")
	}
	if sealed, resent := ln.s.refusals.counts(); sealed != 2 || resent != 1 {
		t.Errorf("sealed %d closes, resent %d; want 2 and 1", sealed, resent)
	}
	if n := tr.Stats().Refused[RefusedHandshakeSlots.String()]; n != 3 {
		t.Errorf("%d refusals counted, want 3", n)
	}
}

// BenchmarkRefusalClose: refusing an Initial of an attempt refused
// before (the close copied from the table) against one of a fresh
// attempt (a key derivation and sealing, then remembered).
func BenchmarkRefusalClose(b *testing.B) {
	r := mustResponder(b)
	hdr := &wire.LongHeader{Type: wire.PacketTypeInitial, Version: wire.Version1, DestConnID: make([]byte, 8), SrcConnID: []byte{1, 2, 3, 4}}
	buf := make([]byte, 0, 2048)
	b.Run("repeated", func(b *testing.B) {
		var c refusalCloses
		if _, err := c.appendClose(buf, r, hdr, ConnectionRefused); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.appendClose(buf[:0], r, hdr, ConnectionRefused); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		var c refusalCloses
		var i uint64
		b.ReportAllocs()
		for b.Loop() {
			i++
			binary.BigEndian.PutUint64(hdr.DestConnID, i)
			if _, err := c.appendClose(buf[:0], r, hdr, ConnectionRefused); err != nil {
				b.Fatal(err)
			}
		}
	})
}
