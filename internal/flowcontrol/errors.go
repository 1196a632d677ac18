package flowcontrol

import (
	"errors"
	"fmt"

	"github.com/turboretry/turboretry/internal/qerr"
)

// ErrorCode is a QUIC transport error code (RFC 9000 section 20.1), the
// qerr package's type, so a connection passes it on unchanged.
type ErrorCode = qerr.TransportErrorCode

// The transport error codes this package reports.
const (
	FlowControlError        = qerr.FlowControlError
	StreamLimitError        = qerr.StreamLimitError
	StreamStateError        = qerr.StreamStateError
	FinalSizeError          = qerr.FinalSizeError
	FrameEncodingError      = qerr.FrameEncodingError
	TransportParameterError = qerr.TransportParameterError
)

// Error is a protocol violation by the peer; the connection closes with a
// CONNECTION_CLOSE frame carrying Code. It is the qerr package's type, so
// errors.Is matches the sentinels below by code.
type Error = qerr.TransportError

// Sentinels for errors.Is. Use errors.As to read the code and reason.
var (
	ErrFlowControl        = &Error{Code: FlowControlError, Reason: "flow control limit exceeded"}
	ErrStreamLimit        = &Error{Code: StreamLimitError, Reason: "stream limit exceeded"}
	ErrStreamState        = &Error{Code: StreamStateError, Reason: "frame for a stream in the wrong state"}
	ErrFinalSize          = &Error{Code: FinalSizeError, Reason: "final size violated"}
	ErrFrameEncoding      = &Error{Code: FrameEncodingError, Reason: "value out of range"}
	ErrTransportParameter = &Error{Code: TransportParameterError, Reason: "transport parameter out of range"}
)

// Local errors: misuse by our own code, not by the peer. They are not
// transport errors and must not be sent to the peer.
var (
	ErrConsumeTooMuch  = errors.New("flowcontrol: consumed more bytes than received")
	ErrCreditExceeded  = errors.New("flowcontrol: sent more bytes than the peer allows")
	ErrStreamsBlocked  = errors.New("flowcontrol: peer's stream limit reached")
	ErrNoOpenStreams   = errors.New("flowcontrol: stream closed that was never opened")
	ErrStreamNumTooBig = errors.New("flowcontrol: stream number above 2^60-1")
)

func newError(code ErrorCode, format string, args ...any) error {
	return qerr.NewTransportError(code, 0, fmt.Sprintf(format, args...))
}
