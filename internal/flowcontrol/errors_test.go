package flowcontrol

import (
	"errors"
	"testing"
)

func TestErrorCodes(t *testing.T) {
	cases := map[ErrorCode]string{
		FlowControlError:        "FLOW_CONTROL_ERROR",
		StreamLimitError:        "STREAM_LIMIT_ERROR",
		StreamStateError:        "STREAM_STATE_ERROR",
		FinalSizeError:          "FINAL_SIZE_ERROR",
		FrameEncodingError:      "FRAME_ENCODING_ERROR",
		TransportParameterError: "TRANSPORT_PARAMETER_ERROR",
	}
	for code, want := range cases {
		if code.String() != want {
			t.Errorf("%d.String() = %q, want %q", uint64(code), code.String(), want)
		}
	}
	// RFC 9000 section 20.1 values.
	if FlowControlError != 0x03 || StreamLimitError != 0x04 || StreamStateError != 0x05 || FinalSizeError != 0x06 {
		t.Fatal("transport error code values differ from RFC 9000 section 20.1")
	}
}

func TestErrorMatching(t *testing.T) {
	err := newError(FinalSizeError, "stream %d", 4)
	if !errors.Is(err, ErrFinalSize) || errors.Is(err, ErrFlowControl) {
		t.Fatalf("errors.Is does not match by code: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != FinalSizeError || e.Reason != "stream 4" {
		t.Fatalf("errors.As: %+v", e)
	}
	if err.Error() != "FINAL_SIZE_ERROR: stream 4" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if errors.Is(err, ErrConsumeTooMuch) {
		t.Fatal("transport error matched a local error")
	}
}

// code returns the transport error code of err, or 0 when it has none.
func code(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
