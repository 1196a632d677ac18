package http3

import (
	"errors"
	"fmt"
	"io"
	"testing"

	quicgohttp3 "github.com/quic-go/quic-go/http3"
)

// TestErrCodeStringsMatchQuicGo compares ErrCode.String and Error.Error
// with quic-go's http3 over every code up to 0x10000 (so the low 16 bits
// repeat once) and a few large ones: programs ported from quic-go print
// and compare these texts.
func TestErrCodeStringsMatchQuicGo(t *testing.T) {
	codes := []uint64{1 << 16, 1<<16 + 0x100, 1<<16 + 0x21, 1 << 32, 1<<62 - 1}
	for c := uint64(0); c < 1<<16+0x300; c++ {
		codes = append(codes, c)
	}
	mismatches := 0
	for _, c := range codes {
		ours, theirs := ErrCode(c).String(), quicgohttp3.ErrCode(c).String()
		if ours != theirs && mismatches < 10 {
			mismatches++
			t.Errorf("ErrCode(%#x).String() = %q, quic-go says %q", c, ours, theirs)
		}
		for _, remote := range []bool{false, true} {
			for _, msg := range []string{"", "stream reset"} {
				ours := (&Error{Remote: remote, ErrorCode: ErrCode(c), ErrorMessage: msg}).Error()
				theirs := (&quicgohttp3.Error{Remote: remote, ErrorCode: quicgohttp3.ErrCode(c), ErrorMessage: msg}).Error()
				if ours != theirs && mismatches < 10 {
					mismatches++
					t.Errorf("Error{Remote: %v, ErrorCode: %#x, ErrorMessage: %q}.Error() = %q, quic-go says %q",
						remote, c, msg, ours, theirs)
				}
			}
		}
	}
}

// TestSentinelErrorTextsMatchQuicGo: programs may compare these texts.
func TestSentinelErrorTextsMatchQuicGo(t *testing.T) {
	for _, pair := range [][2]error{
		{ErrNoCachedConn, quicgohttp3.ErrNoCachedConn},
		{ErrTransportClosed, quicgohttp3.ErrTransportClosed},
		{ErrNoAltSvcPort, quicgohttp3.ErrNoAltSvcPort},
	} {
		if pair[0].Error() != pair[1].Error() {
			t.Errorf("%q, quic-go says %q", pair[0], pair[1])
		}
	}
}

func TestErrorFormattingAndMatching(t *testing.T) {
	local := newError(ErrCodeFrameError, "bad %s", "frame")
	if got := local.Error(); got != "H3_FRAME_ERROR (local): bad frame" {
		t.Fatalf("local error: %q", got)
	}
	remote := &Error{Remote: true, ErrorCode: ErrCodeNoError}
	if got := remote.Error(); got != "H3_NO_ERROR" {
		t.Fatalf("remote error: %q", got)
	}
	wrapped := fmt.Errorf("reading: %w", local)
	if !errors.Is(wrapped, &Error{ErrorCode: ErrCodeFrameError}) {
		t.Fatal("errors.Is does not match the same code and origin")
	}
	if errors.Is(wrapped, &Error{ErrorCode: ErrCodeFrameError, Remote: true}) {
		t.Fatal("errors.Is matches a different origin")
	}
	if errors.Is(wrapped, &Error{ErrorCode: ErrCodeIDError}) {
		t.Fatal("errors.Is matches a different code")
	}
	cause := wrapError(ErrCodeQPACKDecompressionFailed, io.ErrUnexpectedEOF, "x")
	if !errors.Is(cause, io.ErrUnexpectedEOF) {
		t.Fatal("wrapped cause not reachable")
	}
	if errorCode(wrapped) != ErrCodeFrameError || errorCode(io.EOF) != ErrCodeInternalError {
		t.Fatal("errorCode")
	}
}
