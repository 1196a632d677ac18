package qerr

import (
	"errors"
	"fmt"
	"testing"
)

// TestTransportErrorIs: errors.Is matches by code, through wrapping, so a
// package's sentinel matches its detailed errors and no other code.
func TestTransportErrorIs(t *testing.T) {
	sentinel := NewTransportError(FlowControlError, 0, "flow control limit exceeded")
	detailed := fmt.Errorf("stream 4: %w", NewTransportError(FlowControlError, 0x08, "data beyond MAX_STREAM_DATA"))
	if !errors.Is(detailed, sentinel) {
		t.Error("a detailed FLOW_CONTROL_ERROR does not match its sentinel")
	}
	if errors.Is(detailed, NewTransportError(FinalSizeError, 0, "")) {
		t.Error("a FLOW_CONTROL_ERROR matches FINAL_SIZE_ERROR")
	}
	if errors.Is(errors.New("FLOW_CONTROL_ERROR"), sentinel) {
		t.Error("a plain error matches a transport error")
	}
	var te *TransportError
	if !errors.As(detailed, &te) || te.FrameType != 0x08 || te.Error() != "FLOW_CONTROL_ERROR (frame 0x8): data beyond MAX_STREAM_DATA" {
		t.Errorf("errors.As: %v", te)
	}
}
