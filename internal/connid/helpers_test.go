package connid

import (
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

// wantCode fails unless err is a *qerr.TransportError with code and frame type.
func wantCode(t *testing.T, err error, code qerr.TransportErrorCode, frameType uint64) {
	t.Helper()
	var te *qerr.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("error %v is not a *qerr.TransportError", err)
	}
	if te.Code != code || te.FrameType != frameType {
		t.Fatalf("got %v frame 0x%x, want %v frame 0x%x", te.Code, te.FrameType, code, frameType)
	}
}

func mustCID(t testing.TB, b []byte) protocol.ConnectionID {
	t.Helper()
	c, err := protocol.ParseConnectionID(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
