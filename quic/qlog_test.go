package quic

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
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

// checkQlogHeader checks the trace header: qlogwriter's (sequential file
// schema, the trace grouped by the ODCID), with the draft 0.3 version and
// format that qvis reads.
func checkQlogHeader(t *testing.T, h map[string]any, vantage string, odcid []byte) {
	t.Helper()
	if h["qlog_version"] != "0.3" || h["qlog_format"] != "JSON-SEQ" {
		t.Fatalf("header version/format: %v", h)
	}
	if h["file_schema"] != "urn:ietf:params:qlog:file:sequential" || h["serialization_format"] != "application/qlog+json-seq" {
		t.Fatalf("header schema/serialization: %v", h)
	}
	trace, _ := h["trace"].(map[string]any)
	vp, _ := trace["vantage_point"].(map[string]any)
	if vp["type"] != vantage {
		t.Fatalf("vantage point %v, want %s", vp, vantage)
	}
	cf, _ := trace["common_fields"].(map[string]any)
	if cf["group_id"] != hex.EncodeToString(odcid) {
		t.Fatalf("common fields %v, want group_id %x", cf, odcid)
	}
	ref, _ := cf["reference_time"].(map[string]any)
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ref["wall_clock_time"])); err != nil {
		t.Fatalf("reference_time %v: %v", cf["reference_time"], err)
	}
}

// qlogSummary counts what a test looks for in a trace.
type qlogSummary struct {
	names       map[string]int
	frames      map[string]map[string]int // event name -> frame type -> count
	streamBytes map[string]uint64         // event name -> STREAM frame bytes
	closed      map[string]any
	closedAt    int // index of connection_closed
	initiators  map[string]bool
}

func summarize(events []qlogEvent) qlogSummary {
	s := qlogSummary{names: map[string]int{}, frames: map[string]map[string]int{}, streamBytes: map[string]uint64{}, initiators: map[string]bool{}, closedAt: -1}
	for i, ev := range events {
		s.names[ev.Name]++
		switch ev.Name {
		case "transport:packet_sent", "transport:packet_received":
			if s.frames[ev.Name] == nil {
				s.frames[ev.Name] = map[string]int{}
			}
			for _, typ := range frameTypes(ev) {
				s.frames[ev.Name][typ]++
			}
			frames, _ := ev.Data["frames"].([]any)
			for _, f := range frames {
				fm, _ := f.(map[string]any)
				if fm["frame_type"] == "stream" {
					n, _ := fm["length"].(float64)
					s.streamBytes[ev.Name] += uint64(n)
				}
			}
		case "transport:connection_closed":
			s.closed, s.closedAt = ev.Data, i
		case "transport:parameters_set":
			initiator, _ := ev.Data["initiator"].(string)
			s.initiators[initiator] = true
		}
	}
	return s
}

// frameTypes lists the frame types of a packet event.
func frameTypes(ev qlogEvent) []string {
	var types []string
	frames, _ := ev.Data["frames"].([]any)
	for _, f := range frames {
		fm, _ := f.(map[string]any)
		typ, _ := fm["frame_type"].(string)
		types = append(types, typ)
	}
	return types
}

// checkEndsWithClose checks that connection_closed is recorded once and
// that only the closed state and the packets carrying CONNECTION_CLOSE
// follow it.
func checkEndsWithClose(t *testing.T, events []qlogEvent, s qlogSummary) {
	t.Helper()
	if s.names["transport:connection_closed"] != 1 {
		t.Fatalf("%d connection_closed events, want 1", s.names["transport:connection_closed"])
	}
	for _, ev := range events[s.closedAt+1:] {
		switch {
		case ev.Name == "quic:connection_state_updated" && ev.Data["new"] == "closed":
		case ev.Name == "transport:packet_sent" && slices.Contains(frameTypes(ev), "connection_close"):
		default:
			t.Fatalf("%s %v after connection_closed", ev.Name, ev.Data)
		}
	}
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
	// What each side counted before the close: its trace holds at least
	// those packets (it ends with the close, before the closing period).
	stats := map[*Conn]ConnectionStats{c: c.ConnectionStats(), sc: sc.ConnectionStats()}
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
			stats := stats[side.conn]
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
			for _, want := range []string{"transport:connection_started", "quic:connection_state_updated", "recovery:metrics_updated", "transport:connection_closed"} {
				if s.names[want] == 0 {
					t.Errorf("no %s event", want)
				}
			}
			if !s.initiators["local"] || !s.initiators["remote"] {
				t.Errorf("parameters_set initiators %v", s.initiators)
			}
			if s.closed["initiator"] != side.owner || s.closed["application_error"] != "unknown" || s.closed["error_code"] != 0.0 || s.closed["reason"] != "bye \"now\"\n" {
				t.Errorf("connection_closed %v", s.closed)
			}
			checkEndsWithClose(t, events, s)
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
	// As a Tracer's recorder, the trace ends with the close.
	select {
	case <-w.done:
	default:
		t.Fatal("qlog writer not closed when CloseWithError returned")
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
	if s.closed["initiator"] != "local" || s.closed["application_error"] != "unknown" || s.closed["error_code"] != 7.0 || s.closed["reason"] != "done" {
		t.Errorf("connection_closed %v", s.closed)
	}
	checkEndsWithClose(t, events, s)
}

// A writer that fails must not disturb the connection; qlog stops after
// the first failed write (the trace header), and the writer is closed.
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
	on := c.trace != nil || c.qlogTrace != nil
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

// TestQlogDirKeepsEarlierFiles: a second connection with the same
// original DCID gets a file of its own instead of truncating the first's;
// past qlogNameTries names the connection runs without qlog.
func TestQlogDirKeepsEarlierFiles(t *testing.T) {
	dir := t.TempDir()
	open := QlogDir(dir)
	odcid := []byte{0xab, 0xcd}
	for i := range qlogNameTries {
		w := open(PerspectiveServer, odcid)
		if w == nil {
			t.Fatalf("connection %d: no writer", i+1)
		}
		fmt.Fprintf(w, "connection %d\n", i+1)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range qlogNameTries {
		name := "abcd_server.sqlog"
		if i > 0 {
			name = fmt.Sprintf("abcd_server_%d.sqlog", i+1)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if want := fmt.Sprintf("connection %d\n", i+1); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if w := open(PerspectiveServer, odcid); w != nil {
		w.Close()
		t.Errorf("a writer past %d files for one original DCID", qlogNameTries)
	}
	if w := open(PerspectiveClient, odcid); w == nil {
		t.Error("the client's file for the same DCID was refused")
	} else {
		w.Close()
	}
}

// namesTrace is a Config.Tracer trace that keeps the names of the events
// recorded.
type namesTrace struct {
	mu     sync.Mutex
	names  []string
	closed bool
}

func (tr *namesTrace) AddProducer() qlogwriter.Recorder { return tr }

func (tr *namesTrace) RecordEvent(ev qlogwriter.Event) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.names = append(tr.names, ev.Name())
}

func (tr *namesTrace) Close() error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.closed = true
	return nil
}

// TestQlogSameEventsAsTracer: Config.Qlog writes the events Config.Tracer
// records, in the same order, when both are set (one pipeline); the
// server's Config.Qlog trace, alone, is complete once its connection
// drained.
func TestQlogSameEventsAsTracer(t *testing.T) {
	simTest(t, callbackLink, func(t *testing.T, s *sim) {
		sw := newMemQlog()
		srv := s.server(nil, &Config{Qlog: func(Perspective, []byte) io.WriteCloser { return sw }})
		cw := newMemQlog()
		tr := &namesTrace{}
		c := s.dial(simClientAddr(1), srv.addr, &Config{
			Qlog:   func(Perspective, []byte) io.WriteCloser { return cw },
			Tracer: func(context.Context, bool, ConnectionID) qlogwriter.Trace { return tr },
		})
		echoN(t, s.ctx(), c, c.OpenStreamSync, 64<<10)
		_ = c.CloseWithError(0, "")
		select {
		case <-cw.done:
		default:
			t.Fatal("the client's qlog writer is not closed when CloseWithError returned")
		}
		tr.mu.Lock()
		names, closed := slices.Clone(tr.names), tr.closed
		tr.mu.Unlock()
		if !closed {
			t.Fatal("the Tracer's recorder is not closed")
		}
		_, events := parseQlog(t, cw.bytes())
		var written []string
		for _, ev := range events {
			written = append(written, ev.Name)
		}
		if !slices.Equal(written, names) {
			t.Fatalf("Config.Qlog wrote %d events, Config.Tracer got %d:\n%v\n%v", len(written), len(names), written, names)
		}
		// The server drains on the client's CONNECTION_CLOSE.
		select {
		case <-sw.done:
		case <-s.ctx().Done():
			t.Fatal("the server's qlog writer was never closed")
		}
		h, events := parseQlog(t, sw.bytes())
		checkQlogHeader(t, h, "server", c.cids.origDest)
		sum := summarize(events)
		if sum.closed["initiator"] != "remote" || sum.streamBytes["transport:packet_received"] < 64<<10 {
			t.Fatalf("server qlog: connection_closed %v, %d STREAM bytes received", sum.closed, sum.streamBytes["transport:packet_received"])
		}
		checkEndsWithClose(t, events, sum)
	})
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
	c.trace.end(c.close.err)
	c.trace = nil
	// The events are recorded, and the writer written and closed, once
	// the lock is released.
	c.unlockAndDeliver()
	select {
	case <-w.done:
	default:
		t.Fatal("the writer was not closed with the recorder")
	}
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
	if s.closed["connection_error"] != "protocol_violation" || s.closed["initiator"] != "local" || s.closed["reason"] != "bad \ufffd\x01" {
		t.Fatalf("connection_closed %v", s.closed)
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
			r.c.startRecorders()
			b.ReportAllocs()
			for b.Loop() {
				r.run(b)
				// Recorded as run records after each turn.
				r.c.unlockAndDeliver()
				r.c.mu.Lock()
			}
			r.c.trace.end(nil)
			r.c.trace = nil
			r.c.unlockAndDeliver()
		})
	}
}

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }

// endedTrace is a trace that has ended: it gives no more recorders.
type endedTrace struct{}

func (endedTrace) AddProducer() qlogwriter.Recorder { return nil }

// TestJoinTraces: the trace of Config.Tracer and Config.Qlog together
// records into both, into the one that has not ended, or gives no
// recorder once both ended.
func TestJoinTraces(t *testing.T) {
	a, b := &namesTrace{}, &namesTrace{}
	if joinTraces(nil, a) != qlogwriter.Trace(a) || joinTraces(a, nil) != qlogwriter.Trace(a) || joinTraces(nil, nil) != nil {
		t.Fatal("a trace joined with none is not itself")
	}
	r := joinTraces(a, b).AddProducer()
	r.RecordEvent(qlog.ConnectionStateUpdated{State: qlog.ConnectionStateAttempted})
	_ = r.Close()
	if len(a.names) != 1 || len(b.names) != 1 || !a.closed || !b.closed {
		t.Fatalf("recorded %v and %v, closed %v and %v", a.names, b.names, a.closed, b.closed)
	}
	c := &namesTrace{}
	if r := joinTraces(endedTrace{}, c).AddProducer(); r != qlogwriter.Recorder(c) {
		t.Fatalf("with the first trace ended: recorder %v", r)
	}
	if r := joinTraces(c, endedTrace{}).AddProducer(); r != qlogwriter.Recorder(c) {
		t.Fatalf("with the second trace ended: recorder %v", r)
	}
	if r := joinTraces(endedTrace{}, endedTrace{}).AddProducer(); r != nil {
		t.Fatalf("with both ended: recorder %v", r)
	}
}
