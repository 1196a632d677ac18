package quic

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	"github.com/turboretry/turboretry/internal/simnet"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
)

// RESET_STREAM_AT (draft-ietf-quic-reliable-stream-reset) with quic-go as
// the peer, both ways, in virtual time: the sender writes, marks the
// reliable boundary, writes more and cancels; the reader must get exactly
// the data up to the boundary and then the reset error. The end of the
// reliable data is written while the link towards the reader is a black
// hole, so that data and the reset itself are lost and must be resent
// after the reset; the link is lossy besides.

const (
	rsaBoundary = 60 << 10 // the reliable size
	rsaLate     = 10 << 10 // the end of the reliable data, written into the black hole
	rsaExtra    = 4 << 10  // written after the boundary, never delivered
	rsaCode     = 42
	rsaBlackout = 300 * time.Millisecond
)

var rsaPayload = func() []byte {
	b := make([]byte, rsaBoundary+rsaExtra)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}()

// streamWriter is what the test needs of our SendStream and quic-go's.
type streamWriter interface {
	Write([]byte) (int, error)
	SetReliableBoundary()
}

// writeAndResetAt writes the reliable data, the last rsaLate bytes of it
// while datagrams from from to to are dropped (for rsaBlackout, restored
// to link), marks the boundary, writes more and cancels with cancel.
func writeAndResetAt(t *testing.T, s *sim, from, to netip.Addr, link simnet.LinkConfig, st streamWriter, cancel func()) {
	t.Helper()
	if _, err := st.Write(rsaPayload[:rsaBoundary-rsaLate]); err != nil {
		t.Fatal(err)
	}
	// Let that data go out and the congestion window open, so that the
	// rest is sent into the black hole at once and the reset follows
	// while it lasts.
	time.Sleep(200 * time.Millisecond)
	lost := s.net.Stats().Lost
	s.net.SetLink(from, to, simnet.LinkConfig{Delay: link.Delay, Loss: 1})
	t.Cleanup(func() {
		t.Logf("%d datagrams lost, %d of them from the black hole on", s.net.Stats().Lost, s.net.Stats().Lost-lost)
	})
	time.AfterFunc(rsaBlackout, func() { s.net.SetLink(from, to, link) })
	if _, err := st.Write(rsaPayload[rsaBoundary-rsaLate : rsaBoundary]); err != nil {
		t.Fatal(err)
	}
	st.SetReliableBoundary()
	if _, err := st.Write(rsaPayload[rsaBoundary:]); err != nil {
		t.Fatal(err)
	}
	cancel()
}

// checkResetAtRead checks what the reader got: with the extension exactly
// the reliable data, without it less (the reset dropped the lost end), and
// the reset error either way.
func checkResetAtRead(t *testing.T, data []byte, err error, code uint64, negotiated bool) {
	t.Helper()
	t.Logf("read %d bytes, then %v", len(data), err)
	if err == nil || code != rsaCode {
		t.Fatalf("read %d bytes and %v (code %d), want stream error %d", len(data), err, code, rsaCode)
	}
	if !bytes.Equal(data, rsaPayload[:len(data)]) {
		t.Fatalf("the %d bytes read are not the stream's", len(data))
	}
	if negotiated && len(data) != rsaBoundary {
		t.Fatalf("read %d bytes before the reset, want the %d below the reliable boundary", len(data), rsaBoundary)
	}
	if !negotiated && len(data) >= rsaBoundary {
		t.Fatalf("read %d bytes without RESET_STREAM_AT: the data lost in the black hole came back", len(data))
	}
}

func TestResetStreamAtOurSenderQuicGoReader(t *testing.T) {
	for _, negotiated := range []bool{true, false} {
		name := "negotiated"
		if !negotiated {
			name = "quic-go without the extension"
		}
		t.Run(name, func(t *testing.T) {
			simTest(t, lossyLink, func(t *testing.T, s *sim) {
				tr := &quicgo.Transport{Conn: s.socket(simServerAddr).Conn}
				t.Cleanup(func() { tr.Close() })
				ln, err := tr.Listen(serverTLS(t), &quicgo.Config{EnableStreamResetPartialDelivery: negotiated})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ln.Close() })
				type result struct {
					data []byte
					err  error
				}
				got := make(chan result, 1)
				go func() {
					c, err := ln.Accept(s.ctx())
					if err != nil {
						got <- result{nil, err}
						return
					}
					st, err := c.AcceptUniStream(s.ctx())
					if err != nil {
						got <- result{nil, err}
						return
					}
					data, err := io.ReadAll(st)
					got <- result{data, err}
				}()
				c := s.dial(simClientAddr(1), ln.Addr(), nil)
				cs := c.ConnectionState().SupportsStreamResetPartialDelivery
				if cs.Remote != negotiated || cs.Local {
					t.Fatalf("SupportsStreamResetPartialDelivery %+v", cs)
				}
				st, err := c.OpenUniStream()
				if err != nil {
					t.Fatal(err)
				}
				writeAndResetAt(t, s, simClientAddr(1).Addr(), simServerAddr.Addr(), lossyLink, st, func() { st.CancelWrite(rsaCode) })
				r := <-got
				var se *quicgo.StreamError
				var code uint64
				if errors.As(r.err, &se) && se.Remote {
					code = uint64(se.ErrorCode)
				}
				checkResetAtRead(t, r.data, r.err, code, negotiated)
				// The send side completes once the reliable data and the
				// reset are acknowledged: the stream is forgotten.
				time.Sleep(5 * time.Second)
				c.mu.Lock()
				left := len(c.streams.all)
				c.mu.Unlock()
				if left != 0 {
					t.Errorf("%d streams still held after the reset completed", left)
				}
				if st := c.ConnectionStats(); st.PacketsLost == 0 {
					t.Errorf("nothing was lost: %+v", st)
				}
			})
		})
	}
}

func TestResetStreamAtQuicGoSenderOurReader(t *testing.T) {
	for _, negotiated := range []bool{true, false} {
		name := "negotiated"
		if !negotiated {
			name = "ours without the extension"
		}
		t.Run(name, func(t *testing.T) {
			simTest(t, lossyLink, func(t *testing.T, s *sim) {
				ln, err := s.transport(simServerAddr).Listen(serverTLS(t), &Config{EnableStreamResetPartialDelivery: negotiated})
				if err != nil {
					t.Fatal(err)
				}
				type result struct {
					data []byte
					err  error
					cs   ConnectionState
				}
				got := make(chan result, 1)
				go func() {
					c, err := ln.Accept(s.ctx())
					if err != nil {
						got <- result{err: err}
						return
					}
					st, err := c.AcceptUniStream(s.ctx())
					if err != nil {
						got <- result{err: err}
						return
					}
					data, err := io.ReadAll(st)
					got <- result{data, err, c.ConnectionState()}
				}()
				qtr := &quicgo.Transport{Conn: s.socket(simClientAddr(1)).Conn}
				t.Cleanup(func() { qtr.Close() })
				qc, err := qtr.Dial(s.ctx(), ln.Addr(), clientTLS(t), &quicgo.Config{EnableStreamResetPartialDelivery: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { qc.CloseWithError(0, "") })
				if cs := qc.ConnectionState().SupportsStreamResetPartialDelivery; cs.Remote != negotiated || !cs.Local {
					t.Fatalf("quic-go's SupportsStreamResetPartialDelivery %+v", cs)
				}
				st, err := qc.OpenUniStream()
				if err != nil {
					t.Fatal(err)
				}
				writeAndResetAt(t, s, simClientAddr(1).Addr(), simServerAddr.Addr(), lossyLink, st, func() { st.CancelWrite(rsaCode) })
				r := <-got
				var se *StreamError
				var code uint64
				if errors.As(r.err, &se) && se.Remote {
					code = uint64(se.ErrorCode)
				}
				checkResetAtRead(t, r.data, r.err, code, negotiated)
				if cs := r.cs.SupportsStreamResetPartialDelivery; cs.Remote != true || cs.Local != negotiated {
					t.Errorf("our SupportsStreamResetPartialDelivery %+v", cs)
				}
			})
		})
	}
}

// A connection fed frames directly (newOfflineConn: a server whose
// handshake is taken as done) checks the receive rules of RESET_STREAM_AT
// frame by frame: its client-initiated unidirectional stream 2 only
// receives.

const rsaStream = 2

// offlineResetAtConn returns an offline connection that advertised
// reset_stream_at.
func offlineResetAtConn(t *testing.T) *Conn {
	c := newOfflineConn(t)
	c.config.EnableStreamResetPartialDelivery = true
	return c
}

func resetAtFrame(final, reliable uint64) []byte {
	return wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeResetStreamAt, StreamID: rsaStream, ErrorCode: rsaCode, FinalSize: final, ReliableSize: reliable})
}

func resetFrame(final uint64) []byte {
	return wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeResetStream, StreamID: rsaStream, ErrorCode: rsaCode, FinalSize: final})
}

var rsaData = []byte("0123456789")

func dataFrame(off, end uint64, fin bool) []byte {
	return wire.AppendStreamFrame(nil, rsaStream, off, rsaData[off:end], fin, true)
}

// feed handles payloads as packets from the peer and fails on a close.
func feed(t *testing.T, c *Conn, payloads ...[]byte) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range payloads {
		c.processPayload(spaceApp, wire.PacketType1RTT, c.stats.packetsRecv, p, time.Now())
		if c.close.err != nil {
			t.Fatalf("closed: %v", c.close.err)
		}
	}
}

// offlineStream returns the peer's stream once a frame opened it (still
// to be accepted: a stream already done is forgotten otherwise).
func offlineStream(t *testing.T, c *Conn) *ReceiveStream {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.streams.acceptUni) != 1 || c.streams.acceptUni[0].id != rsaStream {
		t.Fatal("stream not open")
	}
	return &ReceiveStream{c.streams.acceptUni[0]}
}

// isReset reports whether err is the peer's reset with rsaCode.
func isReset(err error) bool {
	var se *StreamError
	return errors.As(err, &se) && se.Remote && se.ErrorCode == rsaCode && se.StreamID == rsaStream
}

func TestResetStreamAtReceiveOrder(t *testing.T) {
	tests := []struct {
		name   string
		frames [][]byte
		reads  []int    // Read sizes
		want   []string // what each read returns
		errAt  int      // the read that reports the reset (-1: none)
	}{
		{"data then RESET_STREAM_AT", [][]byte{dataFrame(0, 10, false), resetAtFrame(10, 5)}, []int{100, 100}, []string{"01234", ""}, 0},
		{"RESET_STREAM_AT then data", [][]byte{resetAtFrame(10, 5), dataFrame(0, 10, false)}, []int{100}, []string{"01234"}, 0},
		{"read ends at the reliable size", [][]byte{dataFrame(0, 10, false), resetAtFrame(10, 5)}, []int{5, 5}, []string{"01234", ""}, 0},
		{"small reads", [][]byte{dataFrame(0, 10, false), resetAtFrame(10, 5)}, []int{3, 3, 3}, []string{"012", "34", ""}, 1},
		{"reduced reliable size", [][]byte{dataFrame(0, 10, false), resetAtFrame(10, 8), resetAtFrame(10, 3)}, []int{100}, []string{"012"}, 0},
		{"increase ignored", [][]byte{dataFrame(0, 10, false), resetAtFrame(10, 3), resetAtFrame(10, 8)}, []int{100}, []string{"012"}, 0},
		{"RESET_STREAM overrides", [][]byte{dataFrame(0, 10, false), resetAtFrame(10, 8), resetFrame(10)}, []int{100}, []string{""}, 0},
		{"RESET_STREAM_AT after RESET_STREAM ignored", [][]byte{dataFrame(0, 10, false), resetFrame(10), resetAtFrame(10, 8)}, []int{100}, []string{""}, 0},
		{"reliable size 0", [][]byte{dataFrame(0, 10, false), resetAtFrame(10, 0)}, []int{100}, []string{""}, 0},
		{"after the FIN, reliable = final: the reset, not io.EOF", [][]byte{dataFrame(0, 10, true), resetAtFrame(10, 10)}, []int{100, 100}, []string{"0123456789", ""}, 0},
		{"reliable data arrives in pieces", [][]byte{dataFrame(4, 10, false), resetAtFrame(10, 7), dataFrame(0, 2, false)}, []int{100}, []string{"01"}, -1},
		{"data beyond the reliable size not delivered", [][]byte{resetAtFrame(10, 6), dataFrame(0, 10, true)}, []int{100}, []string{"012345"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := offlineResetAtConn(t)
			feed(t, c, tt.frames...)
			st := offlineStream(t, c)
			for i, n := range tt.reads {
				got, err := readNow(t, st, n)
				if got != tt.want[i] {
					t.Fatalf("read %d: %q, want %q", i, got, tt.want[i])
				}
				switch {
				case i == tt.errAt && !isReset(err):
					t.Fatalf("read %d: %v, want the reset", i, err)
				case (i < tt.errAt || tt.errAt < 0) && err != nil && !errors.Is(err, errDeadline):
					t.Fatalf("read %d: %v, want no error yet", i, err)
				case i > tt.errAt && tt.errAt >= 0 && !isReset(err):
					t.Fatalf("read %d after the reset: %v", i, err)
				}
			}
		})
	}
}

// TestResetStreamAtRestArrives: reliable data that comes after the frame
// is read, then the reset; the stream is forgotten and its connection
// credit returned once the reader has it all.
func TestResetStreamAtRestArrives(t *testing.T) {
	c := offlineResetAtConn(t)
	feed(t, c, dataFrame(4, 10, false), resetAtFrame(10, 7))
	st := offlineStream(t, c)
	if got, err := readNow(t, st, 100); got != "" || !errors.Is(err, errDeadline) {
		t.Fatalf("read %q, %v before the data", got, err)
	}
	feed(t, c, dataFrame(0, 4, false))
	if got, err := readNow(t, st, 100); got != "0123456" || !isReset(err) {
		t.Fatalf("read %q, %v", got, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams.all[rsaStream] != nil {
		t.Error("stream still held")
	}
	if held := c.flow.recv.Highest() - c.flow.recv.Consumed(); held != 0 {
		t.Errorf("%d bytes of connection credit still held", held)
	}
}

// TestResetStreamAtPeek: Peek stops at the reliable size with the reset.
func TestResetStreamAtPeek(t *testing.T) {
	c := offlineResetAtConn(t)
	feed(t, c, dataFrame(0, 10, false), resetAtFrame(10, 5))
	s := offlineStream(t, c).s
	buf := make([]byte, 8)
	if n, err := s.peek(buf); string(buf[:n]) != "01234" || !isReset(err) {
		t.Fatalf("peek %q, %v", buf[:n], err)
	}
	if n, err := s.peek(buf[:3]); string(buf[:n]) != "012" || err != nil {
		t.Fatalf("short peek %q, %v", buf[:n], err)
	}
}

// TestResetStreamAtCancelRead: CancelRead while the reliable data is
// awaited ends the stream at once with the peer's reset, sending no
// STOP_SENDING (the reset is already here).
func TestResetStreamAtCancelRead(t *testing.T) {
	c := offlineResetAtConn(t)
	feed(t, c, dataFrame(0, 3, false), resetAtFrame(10, 5))
	st := offlineStream(t, c)
	st.CancelRead(7)
	if got, err := readNow(t, st, 100); got != "" || !isReset(err) {
		t.Fatalf("read %q, %v after CancelRead", got, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams.all[rsaStream] != nil {
		t.Error("stream still held")
	}
}

func TestResetStreamAtErrors(t *testing.T) {
	tests := []struct {
		name       string
		frames     [][]byte
		negotiated bool
		code       TransportErrorCode
	}{
		{"not negotiated", [][]byte{resetAtFrame(10, 5)}, false, FrameEncodingError},
		{"reliable size above final size", [][]byte{{0x24, rsaStream, rsaCode, 5, 6}}, true, FrameEncodingError},
		{"final size changed", [][]byte{resetAtFrame(10, 5), resetAtFrame(11, 5)}, true, FinalSizeError},
		{"final size changed by RESET_STREAM", [][]byte{resetAtFrame(10, 5), resetFrame(9)}, true, FinalSizeError},
		{"final size below data received", [][]byte{dataFrame(0, 10, false), resetAtFrame(8, 5)}, true, FinalSizeError},
		{"final size other than the FIN's", [][]byte{dataFrame(0, 8, true), resetAtFrame(10, 5)}, true, FinalSizeError},
		{"data beyond the final size", [][]byte{resetAtFrame(6, 5), dataFrame(0, 8, false)}, true, FinalSizeError},
		{"error code changed", [][]byte{resetAtFrame(10, 5), wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeResetStreamAt, StreamID: rsaStream, ErrorCode: 1, FinalSize: 10, ReliableSize: 4})}, true, StreamStateError},
		{"on a stream we only send on", [][]byte{wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeResetStreamAt, StreamID: 3, FinalSize: 1})}, true, StreamStateError},
		{"beyond flow control", [][]byte{resetAtFrame(1<<20, 5)}, true, FlowControlError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newOfflineConn(t)
			c.config.EnableStreamResetPartialDelivery = tt.negotiated
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, p := range tt.frames {
				c.processPayload(spaceApp, wire.PacketType1RTT, c.stats.packetsRecv, p, time.Now())
			}
			var te *TransportError
			if !errors.As(c.close.err, &te) || te.ErrorCode != tt.code {
				t.Fatalf("close error %v, want %s", c.close.err, tt.code)
			}
		})
	}
}

// TestResetStreamAtSent checks the frames our sender puts on the wire with
// the frame log: RESET_STREAM_AT with the boundary as its reliable size
// once the peer advertised the extension, after which only data below the
// boundary is sent, and a later SetReliableBoundary moves it up.
func TestResetStreamAtSent(t *testing.T) {
	simTest(t, simnet.LinkConfig{Delay: 10 * time.Millisecond}, func(t *testing.T, s *sim) {
		srv := s.server(nil, &Config{EnableStreamResetPartialDelivery: true})
		ctls := clientTLS(t)
		log := s.logFrames(simClientAddr(1), ctls)
		c := s.dialTLS(simClientAddr(1), srv.addr, ctls, nil)
		st, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		st.SetReliableBoundary() // nothing written yet: 0
		mustWrite(t, st, 1000)
		st.SetReliableBoundary()
		mustWrite(t, st, 2000)
		st.SetReliableBoundary()
		mustWrite(t, st, 500)
		st.CancelWrite(rsaCode)
		st.SetReliableBoundary() // after the reset: no effect
		time.Sleep(time.Second)
		var resets []wire.Frame
		for _, p := range log.packets(t, c, true, defaultConnIDLength) {
			for _, f := range p.frames {
				switch {
				case f.Type == wire.FrameTypeResetStreamAt || f.Type == wire.FrameTypeResetStream:
					resets = append(resets, f)
				case f.Type == wire.FrameTypeStream && len(resets) > 0 && f.Offset+uint64(len(f.Data)) > 3000:
					t.Errorf("STREAM frame [%d,+%d) after the reset", f.Offset, len(f.Data))
				}
			}
		}
		if len(resets) != 1 || resets[0].Type != wire.FrameTypeResetStreamAt || resets[0].ReliableSize != 3000 ||
			resets[0].FinalSize < 3000 || resets[0].ErrorCode != rsaCode {
			t.Fatalf("resets sent: %+v, want one RESET_STREAM_AT with reliable size 3000", resets)
		}
	})
}

// packOffline builds what an offline connection would put into one packet
// of stream control and stream frames, and records it as sent.
func packOffline(t *testing.T, c *Conn) ([]wire.Frame, uint64) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &sentPacket{space: spaceApp, ackLargest: -1}
	b := c.appendControlFrames(nil, 1200, time.Now(), p)
	b = c.appendStreamFrames(b, 1200, p)
	var frames []wire.Frame
	for len(b) > 0 {
		var f wire.Frame
		n, err := wire.ParseFrame(b, &f)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		b = b[n:]
	}
	c.loss.nextHandle++
	c.loss.sent.add(c.loss.nextHandle, p)
	return frames, c.loss.nextHandle
}

// streamFrames sums up the frames of stream id: the highest data end, and
// the resets.
func streamFrames(frames []wire.Frame, id uint64) (end uint64, resets []wire.Frame) {
	for _, f := range frames {
		switch {
		case f.Type == wire.FrameTypeStream && f.StreamID == id:
			end = max(end, f.Offset+uint64(len(f.Data)))
		case (f.Type == wire.FrameTypeResetStream || f.Type == wire.FrameTypeResetStreamAt) && f.StreamID == id:
			resets = append(resets, f)
		}
	}
	return end, resets
}

// offlineSender returns an offline connection whose peer advertised
// reset_stream_at, and a stream of it (ID 3) with 3000 bytes written
// below the reliable boundary and 2000 after, reset with CancelWrite.
func offlineSender(t *testing.T) (*Conn, *SendStream) {
	t.Helper()
	c := newOfflineConn(t)
	c.hs.peerParams.ResetStreamAt = true
	st, err := c.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, st, 3000)
	st.SetReliableBoundary()
	mustWrite(t, st, 2000)
	st.CancelWrite(rsaCode)
	return c, st
}

// TestResetStreamAtSenderFrames: the data below the boundary goes out
// (none beyond it), then RESET_STREAM_AT; lost, both are sent again; a
// STOP_SENDING replaces the reset with RESET_STREAM of the same final
// size; the stream is forgotten once everything is acknowledged.
func TestResetStreamAtSenderFrames(t *testing.T) {
	const id = 3
	t.Run("sent, lost, resent, acknowledged", func(t *testing.T) {
		c, _ := offlineSender(t)
		var handles []uint64
		var end uint64
		var resets []wire.Frame
		for range 5 {
			frames, h := packOffline(t, c)
			handles = append(handles, h)
			e, r := streamFrames(frames, id)
			if len(resets) > 0 && e > 0 {
				t.Fatal("STREAM frame after the RESET_STREAM_AT")
			}
			end, resets = max(end, e), append(resets, r...)
		}
		if end != 3000 || len(resets) != 1 || resets[0].Type != wire.FrameTypeResetStreamAt ||
			resets[0].ReliableSize != 3000 || resets[0].FinalSize != 3000 {
			t.Fatalf("sent data up to %d and resets %+v", end, resets)
		}
		c.mu.Lock()
		for _, h := range handles {
			c.onPacketLost(h, time.Now())
		}
		c.mu.Unlock()
		end, resets = 0, nil
		handles = handles[:0]
		var resetHandle uint64
		for range 5 {
			frames, h := packOffline(t, c)
			e, r := streamFrames(frames, id)
			if len(r) > 0 {
				resetHandle = h
			} else {
				handles = append(handles, h)
			}
			end, resets = max(end, e), append(resets, r...)
		}
		if end != 3000 || len(resets) != 1 || resets[0].ReliableSize != 3000 {
			t.Fatalf("after the loss: data up to %d and resets %+v", end, resets)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, h := range handles {
			c.onPacketAcked(h)
		}
		if c.streams.all[id] == nil {
			t.Fatal("stream forgotten before its RESET_STREAM_AT was acknowledged")
		}
		c.onPacketAcked(resetHandle)
		if c.streams.all[id] != nil {
			t.Fatal("stream still held after its data and reset were acknowledged")
		}
	})
	t.Run("STOP_SENDING after RESET_STREAM_AT", func(t *testing.T) {
		c, _ := offlineSender(t)
		for range 5 {
			packOffline(t, c)
		}
		feed(t, c, wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeStopSending, StreamID: id, ErrorCode: 9}))
		frames, _ := packOffline(t, c)
		end, resets := streamFrames(frames, id)
		if end != 0 || len(resets) != 1 || resets[0].Type != wire.FrameTypeResetStream || resets[0].FinalSize != 3000 || resets[0].ErrorCode != rsaCode {
			t.Fatalf("after STOP_SENDING: data up to %d, resets %+v", end, resets)
		}
	})
	t.Run("STOP_SENDING before anything was sent", func(t *testing.T) {
		c, _ := offlineSender(t)
		feed(t, c, wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypeStopSending, StreamID: id, ErrorCode: 9}))
		frames, _ := packOffline(t, c)
		end, resets := streamFrames(frames, id)
		if end != 0 || len(resets) != 1 || resets[0].Type != wire.FrameTypeResetStream || resets[0].FinalSize != 0 {
			t.Fatalf("after STOP_SENDING: data up to %d, resets %+v", end, resets)
		}
	})
	t.Run("peer without the extension", func(t *testing.T) {
		c := newOfflineConn(t)
		st, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, st, 3000)
		st.SetReliableBoundary()
		st.CancelWrite(rsaCode)
		frames, _ := packOffline(t, c)
		if end, resets := streamFrames(frames, id); end != 0 || len(resets) != 1 || resets[0].Type != wire.FrameTypeResetStream {
			t.Fatalf("data up to %d, resets %+v", end, resets)
		}
	})
}

// TestResetStreamAtLogged: the qlog names RESET_STREAM_AT and its
// reliable size.
func TestResetStreamAtLogged(t *testing.T) {
	f := wire.Frame{Type: wire.FrameTypeResetStreamAt, StreamID: 4, ErrorCode: 7, FinalSize: 100, ReliableSize: 60}
	rs, ok := traceFrame(&f, 3).(*qlog.ResetStreamFrame)
	if !ok || rs.ReliableSize != 60 || rs.FinalSize != 100 || rs.StreamID != 4 || rs.ErrorCode != 7 {
		t.Fatalf("tracer frame %#v", traceFrame(&f, 3))
	}
	tr := &connTracer{}
	b := string(encodeTraceEvent(t, qlog.PacketSent{Frames: tr.frames(wire.AppendFrame(nil, &f), 3, qlog.PacketType1RTT)}))
	for _, want := range []string{`"frame_type":"reset_stream_at"`, `"stream_id":4`, `"error_code":7`, `"final_size":100`, `"reliable_size":60`} {
		if !strings.Contains(b, want) {
			t.Errorf("qlog %s lacks %s", b, want)
		}
	}
}

// TestResetStreamAtRememberedFor0RTT: a ticket remembers reset_stream_at
// on both sides (draft section 3): the client uses the server's value in
// 0-RTT, and a server that turned the extension off since refuses the
// early data.
func TestResetStreamAtRememberedFor0RTT(t *testing.T) {
	p := wire.DefaultTransportParameters()
	p.ResetStreamAt = true
	ticket := &tls.SessionState{Extra: [][]byte{append(slices.Clone(rememberedTag), earlyLimits(&p)...)}}
	if got := rememberedParams(ticket); got == nil || !got.ResetStreamAt {
		t.Fatalf("remembered %+v", got)
	}
	c := newOfflineConn(t)
	c.config.Allow0RTT = true
	c.config.EnableStreamResetPartialDelivery = true
	issued := c.ticketOptions().Extra
	for _, on := range []bool{true, false} {
		c.config.EnableStreamResetPartialDelivery = on
		s := &tls.SessionState{EarlyData: true, Extra: issued}
		c.onResumeSession(s)
		if s.EarlyData != on {
			t.Errorf("extension now %v: early data accepted %v", on, s.EarlyData)
		}
	}
}

// FuzzResetStreamAtFrames feeds two packets of frames to a connection that
// advertised reset_stream_at, reading stream 2 after each: whatever the
// order of data, FINs and resets, nothing panics, and packets can be built
// afterwards.
func FuzzResetStreamAtFrames(f *testing.F) {
	f.Add(dataFrame(0, 10, false), resetAtFrame(10, 5), uint8(3))
	f.Add(resetAtFrame(10, 7), dataFrame(4, 10, true), uint8(100))
	f.Add(cat(resetAtFrame(10, 8), resetAtFrame(10, 3)), resetFrame(10), uint8(1))
	f.Add(dataFrame(0, 10, true), cat(resetAtFrame(10, 10), dataFrame(0, 10, true)), uint8(4))
	f.Fuzz(func(t *testing.T, first, second []byte, readSize uint8) {
		c := offlineResetAtConn(t)
		var st *ReceiveStream
		for i, payload := range [][]byte{first, second} {
			c.mu.Lock()
			c.processPayload(spaceApp, wire.PacketType1RTT, uint64(i), payload, time.Now())
			closed := c.close.err != nil
			if st == nil && len(c.streams.acceptUni) > 0 {
				st = &ReceiveStream{c.streams.acceptUni[0]}
			}
			c.mu.Unlock()
			if closed {
				return
			}
			if st != nil {
				_ = st.SetReadDeadline(time.Now().Add(-time.Second))
				_, _ = st.Read(make([]byte, int(readSize)))
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.sendLocked(time.Now())
		c.send.pending = nil
	})
}
