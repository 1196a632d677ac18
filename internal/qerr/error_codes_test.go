package qerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeValues(t *testing.T) {
	// Values from RFC 9000 section 20.1 and RFC 9368 section 10.2.
	want := map[TransportErrorCode]uint64{
		NoError: 0x0, InternalError: 0x1, ConnectionRefused: 0x2, FlowControlError: 0x3,
		StreamLimitError: 0x4, StreamStateError: 0x5, FinalSizeError: 0x6,
		FrameEncodingError: 0x7, TransportParameterError: 0x8, ConnectionIDLimitError: 0x9,
		ProtocolViolation: 0xa, InvalidToken: 0xb, ApplicationError: 0xc,
		CryptoBufferExceeded: 0xd, KeyUpdateError: 0xe, AEADLimitReached: 0xf,
		NoViablePath: 0x10, VersionNegotiationError: 0x11,
	}
	for c, v := range want {
		if uint64(c) != v {
			t.Errorf("%s = %#x, want %#x", c, uint64(c), v)
		}
	}
}

func TestCodeString(t *testing.T) {
	tests := []struct {
		c    TransportErrorCode
		want string
	}{
		{NoError, "NO_ERROR"},
		{FrameEncodingError, "FRAME_ENCODING_ERROR"},
		{NoViablePath, "NO_VIABLE_PATH"},
		{CryptoError(42), "CRYPTO_ERROR (alert 42)"},
		{0x1234, "unknown error code 0x1234"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%#x.String() = %q, want %q", uint64(tt.c), got, tt.want)
		}
	}
}

func TestCryptoError(t *testing.T) {
	c := CryptoError(0x78) // no_application_protocol
	if c != 0x178 {
		t.Fatalf("CryptoError(0x78) = %#x", uint64(c))
	}
	if a, ok := c.TLSAlert(); !ok || a != 0x78 {
		t.Fatalf("TLSAlert = %#x, %v", a, ok)
	}
	for _, c := range []TransportErrorCode{0xff, 0x200, NoError} {
		if _, ok := c.TLSAlert(); ok || c.IsCryptoError() {
			t.Errorf("%#x treated as crypto error", uint64(c))
		}
	}
	if !CryptoErrorBase.IsCryptoError() || !CryptoErrorMax.IsCryptoError() {
		t.Error("range bounds not crypto errors")
	}
}

func TestTransportError(t *testing.T) {
	var err error = NewFrameEncodingError(0x02, "ack range underflow")
	if got, want := err.Error(), "FRAME_ENCODING_ERROR (frame 0x2): ack range underflow"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var te *TransportError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &te) || te.Code != FrameEncodingError || te.FrameType != 2 {
		t.Errorf("errors.As gave %+v", te)
	}
	if got := NewTransportParameterError("max_ack_delay too large").Error(); got != "TRANSPORT_PARAMETER_ERROR: max_ack_delay too large" {
		t.Errorf("Error() = %q", got)
	}
	if got := NewProtocolViolation(0x1e, "").Error(); got != "PROTOCOL_VIOLATION (frame 0x1e)" {
		t.Errorf("Error() = %q", got)
	}
}
