package streambuf

import "github.com/turboretry/turboretry/internal/qerr"

// Error is a violation by the peer found while reassembling stream data,
// the qerr package's type. The connection closes with a CONNECTION_CLOSE
// frame carrying Code; the frame type is the STREAM or CRYPTO frame that
// carried the data.
type Error = qerr.TransportError

// Errors returned by RecvBuffer.Push. They are shared values, so returning
// them never allocates; compare with errors.Is or ==, read Code with errors.As.
var (
	// ErrFinalSize: data beyond the final size, a FIN with a final size
	// below data already received, or a second FIN with a different final
	// size (RFC 9000 section 4.5).
	ErrFinalSize = &Error{Code: qerr.FinalSizeError, Reason: "final size violated"}

	// ErrBufferExceeded: data beyond read offset + max buffer. For a STREAM
	// frame the flow-control check should have caught it first, so Code is
	// FLOW_CONTROL_ERROR; for a CRYPTO frame the connection must close with
	// CRYPTO_BUFFER_EXCEEDED instead (RFC 9000 section 7.5).
	ErrBufferExceeded = &Error{Code: qerr.FlowControlError, Reason: "data beyond the receive buffer limit"}

	// ErrOffsetTooLarge: offset + length above 2^62-1 (RFC 9000 section 19.8).
	ErrOffsetTooLarge = &Error{Code: qerr.FrameEncodingError, Reason: "stream offset above 2^62-1"}

	// ErrTooFragmented: the peer left more holes in the received data than
	// MaxRecvGaps. Tracking every hole would let a peer make us spend far
	// more memory on bookkeeping than on data (RFC 9000 section 21.11).
	ErrTooFragmented = &Error{Code: qerr.ProtocolViolation, Reason: "too many gaps in stream data"}
)
