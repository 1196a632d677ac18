package http3

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestErrCodeStrings(t *testing.T) {
	// RFC 9114 section 8.1, RFC 9204 section 6, RFC 9297 section 2.1.
	want := map[ErrCode]string{
		0x100: "H3_NO_ERROR", 0x101: "H3_GENERAL_PROTOCOL_ERROR", 0x102: "H3_INTERNAL_ERROR",
		0x103: "H3_STREAM_CREATION_ERROR", 0x104: "H3_CLOSED_CRITICAL_STREAM",
		0x105: "H3_FRAME_UNEXPECTED", 0x106: "H3_FRAME_ERROR", 0x107: "H3_EXCESSIVE_LOAD",
		0x108: "H3_ID_ERROR", 0x109: "H3_SETTINGS_ERROR", 0x10a: "H3_MISSING_SETTINGS",
		0x10b: "H3_REQUEST_REJECTED", 0x10c: "H3_REQUEST_CANCELLED",
		0x10d: "H3_REQUEST_INCOMPLETE", 0x10e: "H3_MESSAGE_ERROR", 0x10f: "H3_CONNECT_ERROR",
		0x110: "H3_VERSION_FALLBACK", 0x33: "H3_DATAGRAM_ERROR",
		0x200: "QPACK_DECOMPRESSION_FAILED", 0x201: "QPACK_ENCODER_STREAM_ERROR",
		0x202: "QPACK_DECODER_STREAM_ERROR",
		0x21:  "reserved H3 error code 0x21", 0x21 + 0x1f*3: "reserved H3 error code 0x7e",
		0x111: "unknown H3 error code 0x111",
	}
	for code, s := range want {
		if got := code.String(); got != s {
			t.Errorf("ErrCode(%#x).String() = %q, want %q", uint64(code), got, s)
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
