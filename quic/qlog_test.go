package quic

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/wire"
)

// memQlog is an in-memory qlog writer; done is closed by Close.
type memQlog struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	err    error // returned by every Write when set
	done   chan struct{}
}

func newMemQlog() *memQlog { return &memQlog{done: make(chan struct{})} }

func (m *memQlog) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if m.err != nil {
		return 0, m.err
	}
	return m.buf.Write(p)
}

func (m *memQlog) Close() error {
	close(m.done)
	return nil
}

func (m *memQlog) bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.buf.Bytes())
}

type qlogEvent struct {
	Time float64        `json:"time"`
	Name string         `json:"name"`
	Data map[string]any `json:"data"`
}

// parseQlog checks the JSON-SEQ framing and that every record is JSON, and
// returns the header and the events.
func parseQlog(t *testing.T, data []byte) (map[string]any, []qlogEvent) {
	t.Helper()
	if len(data) == 0 || data[0] != 0x1e {
		t.Fatalf("qlog does not start with a record separator: %q", data[:min(len(data), 20)])
	}
	var header map[string]any
	var events []qlogEvent
	for i, rec := range bytes.Split(data[1:], []byte{0x1e}) {
		if len(rec) == 0 || rec[len(rec)-1] != '\n' {
			t.Fatalf("record %d does not end with a newline: %q", i, rec)
		}
		if i == 0 {
			if err := json.Unmarshal(rec, &header); err != nil {
				t.Fatalf("header: %v: %s", err, rec)
			}
			continue
		}
		var ev qlogEvent
		if err := json.Unmarshal(rec, &ev); err != nil {
			t.Fatalf("record %d: %v: %s", i, err, rec)
		}
		if ev.Name == "" || ev.Data == nil {
			t.Fatalf("record %d lacks name or data: %s", i, rec)
		}
		events = append(events, ev)
	}
	return header, events
}

// checkQlogHeader checks the trace header's fields.
func checkQlogHeader(t *testing.T, h map[string]any, vantage string, odcid []byte) {
	t.Helper()
	if h["qlog_version"] != "0.3" || h["qlog_format"] != "JSON-SEQ" {
		t.Fatalf("header version/format: %v", h)
	}
	trace, _ := h["trace"].(map[string]any)
	vp, _ := trace["vantage_point"].(map[string]any)
	if vp["type"] != vantage {
		t.Fatalf("vantage point %v, want %s", vp, vantage)
	}
	cf, _ := trace["common_fields"].(map[string]any)
	if cf["ODCID"] != hex.EncodeToString(odcid) || cf["time_format"] != "relative" {
		t.Fatalf("common fields %v, want ODCID %x", cf, odcid)
	}
	if ref, _ := cf["reference_time"].(float64); ref < 1e12 {
		t.Fatalf("reference_time %v is not milliseconds since the epoch", cf["reference_time"])
	}
}

// qlogSummary counts what a test looks for in a trace.
type qlogSummary struct {
	names        map[string]int
	frames       map[string]map[string]int // event name -> frame type -> count
	streamBytes  map[string]uint64         // event name -> STREAM frame bytes
	closed       map[string]any
	paramsOwners map[string]bool
}

func summarize(events []qlogEvent) qlogSummary {
	s := qlogSummary{names: map[string]int{}, frames: map[string]map[string]int{}, streamBytes: map[string]uint64{}, paramsOwners: map[string]bool{}}
	for _, ev := range events {
		s.names[ev.Name]++
		switch ev.Name {
		case "transport:packet_sent", "transport:packet_received":
			if s.frames[ev.Name] == nil {
				s.frames[ev.Name] = map[string]int{}
			}
			frames, _ := ev.Data["frames"].([]any)
			for _, f := range frames {
				fm, _ := f.(map[string]any)
				typ, _ := fm["frame_type"].(string)
				s.frames[ev.Name][typ]++
				if typ == "stream" {
					n, _ := fm["length"].(float64)
					s.streamBytes[ev.Name] += uint64(n)
				}
			}
		case "transport:connection_closed":
			s.closed = ev.Data
		case "transport:parameters_set":
			owner, _ := ev.Data["owner"].(string)
			s.paramsOwners[owner] = true
		}
	}
	return s
}

// waitDone waits for a connection's goroutine to exit (teardown writes
// the last qlog records).
func waitDone(t *testing.T, ctx context.Context, c *Conn) {
	t.Helper()
	select {
	case <-c.runDone:
	case <-ctx.Done():
		t.Fatal("connection did not end")
	}
}

// echoOnce opens a stream on c, sends msg, and checks the echo.
func echoOnce(t *testing.T, ctx context.Context, c *Conn, msg []byte) {
	t.Helper()
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = s.Write(msg)
		_ = s.Close()
	}()
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echo returned %d bytes, want %d", len(got), len(msg))
	}
}

func TestQlogOursToOurs(t *testing.T) {
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), "qlog")
	conf := &Config{Qlog: QlogDir(dir)}
	ln, err := ListenAddr("127.0.0.1:0", serverTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverConn := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		serverConn <- c
		for {
			s, err := c.AcceptStream(ctx)
			if err != nil {
				return
			}
			go echo(s)
		}
	}()
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 200<<10)
	_, _ = rand.Read(msg)
	echoOnce(t, ctx, c, msg)
	var sc *Conn
	select {
	case sc = <-serverConn:
	case <-ctx.Done():
		t.Fatal("no server connection")
	}
	_ = c.CloseWithError(0, "bye \"now\"\n")
	waitDone(t, ctx, c)
	waitDone(t, ctx, sc)
	odcid := c.cids.origDest
	for _, side := range []struct {
		conn    *Conn
		vantage string
		owner   string
	}{
		{c, "client", "local"},
		{sc, "server", "remote"},
	} {
		t.Run(side.vantage, func(t *testing.T) {
			name := filepath.Join(dir, hex.EncodeToString(odcid)+"_"+side.vantage+".sqlog")
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o644 {
				t.Fatalf("file mode: %v %v", fi.Mode(), err)
			}
			h, events := parseQlog(t, data)
			checkQlogHeader(t, h, side.vantage, odcid)
			s := summarize(events)
			stats := side.conn.ConnectionStats()
			if n := s.names["transport:packet_sent"]; uint64(n) < stats.PacketsSent {
				t.Errorf("%d packet_sent events, stats count %d packets", n, stats.PacketsSent)
			}
			if n := s.names["transport:packet_received"]; uint64(n) < stats.PacketsReceived {
				t.Errorf("%d packet_received events, stats count %d packets", n, stats.PacketsReceived)
			}
			for _, ev := range []string{"transport:packet_sent", "transport:packet_received"} {
				for _, ft := range []string{"stream", "ack", "crypto"} {
					if s.frames[ev][ft] == 0 {
						t.Errorf("no %s frame in %s events: %v", ft, ev, s.frames[ev])
					}
				}
				if s.streamBytes[ev] < uint64(len(msg)) {
					t.Errorf("%s STREAM frames carry %d bytes, want at least %d", ev, s.streamBytes[ev], len(msg))
				}
			}
			for _, want := range []string{"transport:connection_started", "recovery:metrics_updated", "transport:connection_closed"} {
				if s.names[want] == 0 {
					t.Errorf("no %s event", want)
				}
			}
			if !s.paramsOwners["local"] || !s.paramsOwners["remote"] {
				t.Errorf("parameters_set owners %v", s.paramsOwners)
			}
			if s.closed["owner"] != side.owner || s.closed["application_code"] != 0.0 || s.closed["reason"] != "bye \"now\"\n" {
				t.Errorf("connection_closed %v", s.closed)
			}
			if s.names["transport:connection_closed"] != 1 || events[len(events)-1].Name != "transport:connection_closed" {
				t.Errorf("connection_closed is not the single last event")
			}
			for i := 1; i < len(events); i++ {
				if events[i].Time < events[i-1].Time {
					t.Fatalf("time goes back at event %d", i)
				}
			}
		})
	}
}

func TestQlogOurClientQuicGoServer(t *testing.T) {
	ctx := testCtx(t)
	addr := quicgoEchoServer(t, ctx)
	w := newMemQlog()
	var gotPersp Perspective
	var gotODCID []byte
	conf := &Config{Qlog: func(p Perspective, odcid []byte) io.WriteCloser {
		gotPersp, gotODCID = p, odcid
		return w
	}}
	c, err := DialAddr(ctx, addr, clientTLS(t), conf)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 50<<10)
	echoOnce(t, ctx, c, msg)
	stats := c.ConnectionStats()
	_ = c.CloseWithError(7, "done")
	waitDone(t, ctx, c)
	select {
	case <-w.done:
	default:
		t.Fatal("qlog writer not closed at teardown")
	}
	if gotPersp != PerspectiveClient || !bytes.Equal(gotODCID, c.cids.origDest) {
		t.Fatalf("Qlog called with %v %x", gotPersp, gotODCID)
	}
	h, events := parseQlog(t, w.bytes())
	checkQlogHeader(t, h, "client", c.cids.origDest)
	s := summarize(events)
	if n := s.names["transport:packet_received"]; uint64(n) < stats.PacketsReceived {
		t.Errorf("%d packet_received events, stats count %d", n, stats.PacketsReceived)
	}
	if s.streamBytes["transport:packet_received"] < uint64(len(msg)) {
		t.Errorf("received STREAM bytes %d", s.streamBytes["transport:packet_received"])
	}
	for _, ft := range []string{"ack", "handshake_done", "new_connection_id", "crypto"} {
		if s.frames["transport:packet_received"][ft] == 0 {
			t.Errorf("no %s frame received from quic-go: %v", ft, s.frames["transport:packet_received"])
		}
	}
	if s.closed["owner"] != "local" || s.closed["application_code"] != 7.0 || s.closed["trigger"] != "application" {
		t.Errorf("connection_closed %v", s.closed)
	}
}

// A writer that fails must not disturb the connection; qlog stops after
// the first failed write.
func TestQlogFailingWriter(t *testing.T) {
	ctx := testCtx(t)
	sw := newMemQlog()
	sw.err = errors.New("disk full")
	addr := ourEchoServer(t, ctx, &Config{Qlog: func(Perspective, []byte) io.WriteCloser { return sw }})
	cw := newMemQlog()
	cw.err = errors.New("disk full")
	c, err := DialAddr(ctx, addr, clientTLS(t), &Config{Qlog: func(Perspective, []byte) io.WriteCloser { return cw }})
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 1<<20) // well over one buffer of events
	_, _ = rand.Read(msg)
	echoOnce(t, ctx, c, msg)
	echoOnce(t, ctx, c, msg[:1000])
	_ = c.CloseWithError(0, "")
	waitDone(t, ctx, c)
	cw.mu.Lock()
	writes := cw.writes
	cw.mu.Unlock()
	if writes != 1 {
		t.Fatalf("%d writes to a failing writer, want 1", writes)
	}
	select {
	case <-cw.done:
	default:
		t.Fatal("failing writer was not closed")
	}
}

// A nil writer from Config.Qlog means no qlog for that connection.
func TestQlogNilWriter(t *testing.T) {
	ctx := testCtx(t)
	addr := ourEchoServer(t, ctx, nil)
	calls := 0
	c, err := DialAddr(ctx, addr, clientTLS(t), &Config{Qlog: func(Perspective, []byte) io.WriteCloser { calls++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	echoOnce(t, ctx, c, []byte("hello"))
	c.mu.Lock()
	on := c.qlog != nil
	c.mu.Unlock()
	if calls != 1 || on {
		t.Fatalf("calls %d, qlog on %v", calls, on)
	}
}

func TestQlogDirUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory below a regular file cannot be created.
	if w := QlogDir(filepath.Join(file, "qlog"))(PerspectiveServer, []byte{1, 2}); w != nil {
		t.Fatal("QlogDir returned a writer for an impossible directory")
	}
}

// offlineRound drives a connection without a peer or event loop: each
// run hands it a sealed 1-RTT packet holding a PING (and an ACK of what it
// sent) and builds the datagram with its ACK, so both qlog hooks on the
// 1-RTT receive and send paths run, in a steady state.
type offlineRound struct {
	c       *Conn
	peer    *handshake.AppKeys // seals what c receives
	pn      uint64
	now     time.Time
	pkt     []byte
	payload []byte
	ranges  []wire.AckRange
}

func newOfflineRound(t testing.TB) *offlineRound {
	c := newOfflineConn(t)
	secret := make([]byte, 32)
	c.keys.app = newTestAppKeys(t, secret, secret)
	// Each round acknowledges every number below nextPN: none may be skipped.
	c.spaces[spaceApp].skip = recovery.PacketNumberSkipper{}
	return &offlineRound{c: c, peer: newTestAppKeys(t, secret, secret), now: time.Now()}
}

func (r *offlineRound) run(t testing.TB) {
	c := r.c
	r.now = r.now.Add(time.Second)
	p := r.payload[:0]
	if next := c.spaces[spaceApp].nextPN; next > 0 {
		r.ranges = append(r.ranges[:0], wire.AckRange{Smallest: 0, Largest: next - 1})
		p = wire.AppendAckFrame(p, r.ranges, 0)
	}
	p = append(p, byte(wire.FrameTypePing), 0, 0, 0)
	r.payload = p
	b := wire.AppendShortHeader(r.pkt[:0], c.cids.src, 2, false, false)
	pnOffset := len(b)
	b = wire.AppendPacketNumber(b, r.pn, 2)
	b = append(b, p...)
	end := len(b)
	b = append(b, make([]byte, tagLen)...)
	r.pkt = b
	sealed, err := r.peer.ProtectPacket(b[:end:end+tagLen], pnOffset, 2, r.pn)
	if err != nil {
		t.Fatal(err)
	}
	r.pn++
	c.handleShortPacket(sealed, receivedPacket{data: sealed, rcvTime: r.now})
	r.now = r.now.Add(time.Second) // the ACK is due
	d := c.buildDatagram(r.now, maxPacketSize, false)
	if d == nil || c.close.err != nil {
		t.Fatalf("no datagram (close error %v)", c.close.err)
	}
	putSendBuffer(d)
}

func TestQlogOffAllocatesNothing(t *testing.T) {
	r := newOfflineRound(t)
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	for range 50 {
		r.run(t)
	}
	if n := testing.AllocsPerRun(200, func() { r.run(t) }); n != 0 {
		t.Fatalf("%v allocations per packet received and sent without qlog", n)
	}
	if r.c.stats.packetsRecv < 250 { // AllocsPerRun adds a warm-up run
		t.Fatalf("%d packets processed, want 250", r.c.stats.packetsRecv)
	}
}

func TestQlogHooksOnOfflinePaths(t *testing.T) {
	r := newOfflineRound(t)
	c := r.c
	w := newMemQlog()
	c.config.Qlog = func(Perspective, []byte) io.WriteCloser { return w }
	c.mu.Lock()
	c.startRecorders()
	const rounds = 10
	for range rounds {
		r.run(t)
	}
	c.close.err = &TransportError{ErrorCode: ProtocolViolation, ErrorMessage: "bad \xff\x01"}
	c.qlog.closed(c.close.err, &c.out)
	c.qlog = nil
	c.unlockAndDeliver() // the writer is written and closed without the lock
	_, events := parseQlog(t, w.bytes())
	s := summarize(events)
	if s.names["transport:packet_received"] != rounds || s.names["transport:packet_sent"] != rounds {
		t.Fatalf("events %v, want %d packets each way", s.names, rounds)
	}
	if s.frames["transport:packet_received"]["ping"] != rounds || s.frames["transport:packet_received"]["ack"] != rounds-1 || s.frames["transport:packet_sent"]["ack"] != rounds {
		t.Fatalf("frames %v", s.frames)
	}
	if s.names["recovery:metrics_updated"] == 0 {
		t.Fatal("no metrics_updated after RTT samples")
	}
	if s.closed["connection_code"] != float64(ProtocolViolation) || s.closed["trigger"] != "error" || s.closed["reason"] != "bad \ufffd\x01" {
		t.Fatalf("connection_closed %v", s.closed)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "ctl\x00\x1f\x7f\t\r\n", "utf8 é ✓ 😀", "bad \xff\xfe end", "\xe2\x82"} {
		var got string
		b := appendJSONString(nil, s)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q: %v: %s", s, err, b)
		}
		want := string([]rune(s)) // U+FFFD for each invalid byte
		if got != want {
			t.Fatalf("%q: round trip gave %q, want %q", s, got, want)
		}
	}
}

// BenchmarkQlogPacketRound measures one received and one sent packet
// through the offline connection, with and without qlog.
func BenchmarkQlogPacketRound(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			r := newOfflineRound(b)
			if on {
				r.c.config.Qlog = func(Perspective, []byte) io.WriteCloser { return discardCloser{} }
			}
			r.c.mu.Lock()
			defer r.c.mu.Unlock()
			r.c.startRecorders()
			b.ReportAllocs()
			for b.Loop() {
				r.run(b)
			}
		})
	}
}

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }
