//go:build linux

package abuse

import (
	"context"
	"errors"
	"testing"

	quicgo "github.com/quic-go/quic-go"

	"github.com/turboretry/turboretry/http3"
)

// TestProtocolHygiene covers issue 11's protocol items at the server
// level, with quic-go's QUIC stack speaking raw HTTP/3 to the real
// server; the http3 package tests cover each in detail
// (TestUniStreamTimeouts, TestQPACKEncoderStream, FuzzQPACKEncoderStream).
func TestProtocolHygiene(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := ctxFor(t)
	const held = 3 // incomplete uni streams

	// A unidirectional stream whose type varint never completes (0x40
	// starts a two-byte varint): after UniStreamTimeout (10 s) the server
	// stops reading it with H3_STREAM_CREATION_ERROR and the connection
	// goes on.
	t.Run("IncompleteUniStreamType", func(t *testing.T) {
		t.Parallel()
		c := dialH3(ctx, t, s, nil)
		var strs []*quicgo.SendStream
		for range held {
			str, err := c.OpenUniStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := str.Write([]byte{0x40}); err != nil {
				t.Fatal(err)
			}
			strs = append(strs, str)
		}
		for _, str := range strs {
			select {
			case <-str.Context().Done():
			case <-ctx.Done():
				t.Fatal("the server never stopped reading an incomplete uni stream")
			}
			var serr *quicgo.StreamError
			if err := context.Cause(str.Context()); !errors.As(err, &serr) || !serr.Remote || http3.ErrCode(serr.ErrorCode) != http3.ErrCodeStreamCreationError {
				t.Errorf("incomplete uni stream ended with %v, want STOP_SENDING H3_STREAM_CREATION_ERROR", err)
			}
		}
		if err := context.Cause(c.Context()); err != nil {
			t.Errorf("the connection closed: %v", err)
		}
	})

	// RFC 9204 4.3.1: a Set Dynamic Table Capacity above our advertised 0
	// is QPACK_ENCODER_STREAM_ERROR, a connection error.
	t.Run("QPACKEncoderCapacity", func(t *testing.T) {
		t.Parallel()
		c := dialH3(ctx, t, s, nil)
		enc, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		// Stream type 0x02 (QPACK encoder), then 001xxxxx: Set Dynamic
		// Table Capacity with a 5-bit prefix integer, here 1.
		if _, err := enc.Write([]byte{0x02, 0x21}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.Context().Done():
		case <-ctx.Done():
			t.Fatal("the server did not close the connection")
		}
		var aerr *quicgo.ApplicationError
		if err := context.Cause(c.Context()); !errors.As(err, &aerr) || !aerr.Remote || http3.ErrCode(aerr.ErrorCode) != http3.ErrCodeQPACKEncoderStreamError {
			t.Errorf("connection closed with %v, want QPACK_ENCODER_STREAM_ERROR from the server", err)
		}
	})

	// Both were counted, and neither left the server unable to serve (run
	// once both parallel subtests are done).
	t.Cleanup(func() {
		checkBenign(t, benignFetches(ctx, s, "", nil))
		m := s.scrape()
		if n := m[series(mH3Refused, "reason", "uni_stream_timeout")]; n != held {
			t.Errorf("%.0f uni streams counted as timed out, want %d", n, held)
		}
		if n := m[series(mH3Refused, "reason", "connection_error")]; n != 1 {
			t.Errorf("%.0f connections counted as closed for an error, want 1", n)
		}
		checkNoPanics(t, m)
	})
}
