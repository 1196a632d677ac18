package quic

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// dialQuicGoServer returns our client connected to a quic-go listener, and
// the server side of that connection.
func dialQuicGoServer(t *testing.T) (*Conn, *quicgo.Conn) {
	t.Helper()
	ctx := testCtx(t)
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c, sc
}

func TestUniStreamToQuicGo(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	data := testData(100_000, 7)
	s, err := c.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = s.Write(data)
		_ = s.Close()
	}()
	rs, err := sc.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
	// And back: quic-go opens a unidirectional stream to us.
	ss, err := sc.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = ss.Write(data)
		_ = ss.Close()
	}()
	r, err := c.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.StreamID()&3 != 3 {
		t.Fatalf("stream ID %d is not server-initiated unidirectional", r.StreamID())
	}
	got, err = io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
}

func TestCancelWriteSeenByQuicGo(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	s.CancelWrite(42)
	if _, err := s.Write([]byte("x")); err == nil {
		t.Fatal("Write after CancelWrite succeeded")
	}
	rs, err := sc.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rs)
	var se *quicgo.StreamError
	if !errors.As(err, &se) || se.ErrorCode != 42 || !se.Remote {
		t.Fatalf("quic-go read error %v, want remote StreamError 42", err)
	}
}

func TestCancelReadSeenByQuicGo(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	s, err := c.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("open")); err != nil {
		t.Fatal(err)
	}
	rs, err := sc.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.CancelRead(43)
	var rerr *StreamError
	if _, err := s.Read(make([]byte, 1)); !errors.As(err, &rerr) || rerr.Remote || rerr.ErrorCode != 43 {
		t.Fatalf("Read after CancelRead: %v", err)
	}
	// quic-go's writes fail once STOP_SENDING arrives.
	buf := make([]byte, 1000)
	for {
		if _, err = rs.Write(buf); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("quic-go write never failed")
		default:
		}
	}
	var se *quicgo.StreamError
	if !errors.As(err, &se) || se.ErrorCode != 43 || !se.Remote {
		t.Fatalf("quic-go write error %v, want remote StreamError 43", err)
	}
}

func TestQuicGoCancelWriteSeenByUs(t *testing.T) {
	ctx := testCtx(t)
	c, sc := dialQuicGoServer(t)
	ss, err := sc.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	ss.CancelWrite(44)
	s, err := c.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(s)
	var se *StreamError
	if !errors.As(err, &se) || se.ErrorCode != 44 || !se.Remote || se.StreamID != StreamID(ss.StreamID()) {
		t.Fatalf("read error %v, want remote StreamError 44", err)
	}
	// quic-go asks us to stop sending: our Write fails with its code.
	ss.CancelRead(45)
	buf := make([]byte, 1000)
	for {
		if _, err = s.Write(buf); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("write never failed")
		default:
		}
	}
	if !errors.As(err, &se) || se.ErrorCode != 45 || !se.Remote {
		t.Fatalf("write error %v, want remote StreamError 45", err)
	}
}

// TestOpenUniStreamAtPeerLimit opens unidirectional streams up to and past
// the peer's limit: OpenUniStream reports StreamLimitReachedError,
// OpenUniStreamSync waits for the context, and once the peer raises the limit
// (the streams are consumed) a waiting open succeeds. This used to panic
// with an index out of range.
func TestOpenUniStreamAtPeerLimit(t *testing.T) {
	ctx := testCtx(t)
	ln, err := quicgo.ListenAddr("127.0.0.1:0", serverTLS(t), &quicgo.Config{MaxIncomingUniStreams: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := DialAddr(ctx, ln.Addr().String(), clientTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var opened []*SendStream
	for range 2 {
		s, err := c.OpenUniStream()
		if err != nil {
			t.Fatalf("open below the limit: %v", err)
		}
		opened = append(opened, s)
	}
	var limitErr *StreamLimitReachedError
	if _, err := c.OpenUniStream(); !errors.As(err, &limitErr) || !errors.Is(err, StreamLimitReachedError{}) || !errors.Is(err, &StreamLimitReachedError{}) {
		t.Fatalf("OpenUniStream at the limit: %v, want StreamLimitReachedError", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = c.OpenUniStreamSync(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("OpenUniStreamSync at the limit: %v, want the context's error", err)
	}
	// The peer consumes the two streams and grants more.
	for _, s := range opened {
		_, _ = s.Write([]byte("x"))
		_ = s.Close()
	}
	go func() {
		for range 2 {
			rs, err := sc.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			_, _ = io.ReadAll(rs)
		}
	}()
	s, err := c.OpenUniStreamSync(ctx)
	if err != nil {
		t.Fatalf("OpenUniStreamSync after the peer raised its limit: %v", err)
	}
	_ = s.Close()
}
