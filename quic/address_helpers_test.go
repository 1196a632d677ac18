package quic

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/turboretry/turboretry/internal/testutil"

	"github.com/turboretry/turboretry/internal/testutil/initial"
	"github.com/turboretry/turboretry/internal/wire"
)

// testTokenSecret is the root secret of the address-validation tests (the
// docs/design.md test vector secret 000102...1f).
var testTokenSecret = testutil.Secret(0)

// avEchoServer starts a listener with address validation on a Transport
// and echoes the first stream of every connection it accepts.
func avEchoServer(t testing.TB, ctx context.Context, av *AddressValidationConfig) (*Transport, *Listener) {
	tr, ln, _ := avEchoServerStates(t, ctx, av)
	return tr, ln
}

// validations records how each accepted connection's address was validated.
type validations struct {
	mu    sync.Mutex
	kinds []TokenKind
}

func (v *validations) add(k TokenKind) {
	v.mu.Lock()
	v.kinds = append(v.kinds, k)
	v.mu.Unlock()
}

// list returns the kinds recorded so far, in accept order.
func (v *validations) list() []TokenKind {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]TokenKind(nil), v.kinds...)
}

// avEchoServerStates is avEchoServer that also records each accepted
// connection's ConnectionState().ValidatedBy.
func avEchoServerStates(t testing.TB, ctx context.Context, av *AddressValidationConfig) (*Transport, *Listener, *validations) {
	seen := &validations{}
	tr := &Transport{Conn: listenUDP(t), AddressValidation: av}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen(serverTLS(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			seen.add(c.ConnectionState().ValidatedBy)
			go func() {
				s, err := c.AcceptStream(ctx)
				if err != nil {
					return
				}
				_, _ = io.Copy(s, s)
				_ = s.Close()
			}()
		}
	}()
	return tr, ln, seen
}

// buildClientInitial returns a client Initial (a PING, padded to size
// bytes) protected with the Initial keys of dcid, as a client would send.
func buildClientInitial(t testing.TB, dcid, scid, tok []byte, size int) []byte {
	return buildClientInitialWith(t, dcid, scid, tok, []byte{byte(wire.FrameTypePing)}, size)
}

// buildClientInitialWith is buildClientInitial carrying the frames in
// payload.
func buildClientInitialWith(t testing.TB, dcid, scid, tok, payload []byte, size int) []byte {
	return initial.Build(t, initial.Packet{DCID: dcid, SCID: scid, Token: tok, PNLen: 2, Payload: payload, Size: size})
}

// serverConns counts the listener's connections, established or not.
func serverConns(ln *Listener) int {
	t := ln.s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[*Conn]bool{}
	for _, c := range t.handlers {
		seen[c] = true
	}
	return len(seen)
}
