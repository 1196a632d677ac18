package qerr

import "strconv"

// TransportError is a connection error with a transport error code
// (RFC 9000 section 11.1): the one shape of a peer's violation in every
// internal package (wire, connid, flowcontrol, streambuf, recovery), so
// the connection puts Code, FrameType and Reason straight into a
// CONNECTION_CLOSE frame (and the quic package's TransportError at its
// API).
type TransportError struct {
	Code TransportErrorCode
	// FrameType is the type of the frame that triggered the error; 0 when
	// unknown or not frame related (RFC 9000 section 19.19).
	FrameType uint64
	// Reason is a short human-readable explanation, sent as the reason phrase.
	Reason string
}

// Error implements error.
func (e *TransportError) Error() string {
	s := e.Code.String()
	if e.FrameType != 0 {
		s += " (frame 0x" + strconv.FormatUint(e.FrameType, 16) + ")"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is makes errors.Is match any *TransportError with the same code, so a
// package's sentinels (flowcontrol.ErrFlowControl) match the detailed
// errors it returns.
func (e *TransportError) Is(target error) bool {
	t, ok := target.(*TransportError)
	return ok && t.Code == e.Code
}

// NewTransportError returns a TransportError. Parsers call it with constant
// reasons and create hot-path errors once, so error paths stay cheap under
// floods of garbage.
func NewTransportError(code TransportErrorCode, frameType uint64, reason string) *TransportError {
	return &TransportError{Code: code, FrameType: frameType, Reason: reason}
}

// NewFrameEncodingError returns a FRAME_ENCODING_ERROR for a malformed frame.
func NewFrameEncodingError(frameType uint64, reason string) *TransportError {
	return NewTransportError(FrameEncodingError, frameType, reason)
}

// NewProtocolViolation returns a PROTOCOL_VIOLATION error.
func NewProtocolViolation(frameType uint64, reason string) *TransportError {
	return NewTransportError(ProtocolViolation, frameType, reason)
}

// NewTransportParameterError returns a TRANSPORT_PARAMETER_ERROR; the
// reason names the offending parameter.
func NewTransportParameterError(reason string) *TransportError {
	return NewTransportError(TransportParameterError, 0, reason)
}
