package quic

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/turboretry/turboretry/internal/qerr"

	"github.com/turboretry/turboretry/quic/quictype"
)

// ApplicationErrorCode is an application-defined error code, carried in
// CONNECTION_CLOSE frames of type 0x1d.
type ApplicationErrorCode = quictype.ApplicationErrorCode

// StreamErrorCode is an application-defined error code carried in
// RESET_STREAM and STOP_SENDING frames.
type StreamErrorCode = quictype.StreamErrorCode

// TransportErrorCode is a QUIC transport error code (RFC 9000 section 20.1).
type TransportErrorCode = quictype.TransportErrorCode

// Transport error codes of RFC 9000 section 20.1, named as in quic-go.
const (
	NoError                   TransportErrorCode = 0x0
	InternalError             TransportErrorCode = 0x1
	ConnectionRefused         TransportErrorCode = 0x2
	FlowControlError          TransportErrorCode = 0x3
	StreamLimitError          TransportErrorCode = 0x4
	StreamStateError          TransportErrorCode = 0x5
	FinalSizeError            TransportErrorCode = 0x6
	FrameEncodingError        TransportErrorCode = 0x7
	TransportParameterError   TransportErrorCode = 0x8
	ConnectionIDLimitError    TransportErrorCode = 0x9
	ProtocolViolation         TransportErrorCode = 0xa
	InvalidToken              TransportErrorCode = 0xb
	ApplicationErrorErrorCode TransportErrorCode = 0xc
	CryptoBufferExceeded      TransportErrorCode = 0xd
	KeyUpdateError            TransportErrorCode = 0xe
	AEADLimitReached          TransportErrorCode = 0xf
	NoViablePathError         TransportErrorCode = 0x10
)

func role(remote bool) string {
	if remote {
		return "remote"
	}
	return "local"
}

// TransportError is a connection closed with a transport error code, by
// this endpoint (Remote false) or by the peer.
type TransportError struct {
	Remote       bool
	FrameType    uint64
	ErrorCode    TransportErrorCode
	ErrorMessage string
	err          error // the error behind a local one (a TLS failure)
}

// Error implements error. For a TLS alert (CRYPTO_ERROR) it names the
// alert, as quic-go does, besides the peer's reason phrase.
func (e *TransportError) Error() string {
	s := fmt.Sprintf("%s (%s)", e.ErrorCode, role(e.Remote))
	if e.FrameType != 0 {
		s += fmt.Sprintf(" (frame type: %#x)", e.FrameType)
	}
	msg := e.ErrorMessage
	if msg == "" && e.err != nil {
		msg = e.err.Error()
	}
	if e.ErrorCode.IsCryptoError() {
		if alert := tls.AlertError(e.ErrorCode - 0x100).Error(); !strings.Contains(msg, alert) {
			msg = strings.TrimSuffix(alert+": "+msg, ": ")
		}
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// Unwrap makes errors.Is(err, net.ErrClosed) hold and, for a local TLS
// failure, errors.As find the TLS error (*tls.CertificateVerificationError
// and the like), as in quic-go.
func (e *TransportError) Unwrap() []error { return []error{net.ErrClosed, e.err} }

// publicError turns an internal error that ends a connection (the
// transport and flow-control errors of the internal packages) into the
// *TransportError the API returns; other errors pass unchanged.
func publicError(err error) error {
	var te *qerr.TransportError
	if errors.As(err, &te) {
		return &TransportError{ErrorCode: TransportErrorCode(te.Code), FrameType: te.FrameType, ErrorMessage: te.Reason, err: te.Err}
	}
	return err
}

// Is matches another *TransportError with the same code, frame type and side.
func (e *TransportError) Is(target error) bool {
	t, ok := target.(*TransportError)
	return ok && t.ErrorCode == e.ErrorCode && t.FrameType == e.FrameType && t.Remote == e.Remote
}

// ApplicationError is a connection closed by the application (CloseWithError)
// on this side (Remote false) or the peer's.
type ApplicationError struct {
	Remote       bool
	ErrorCode    ApplicationErrorCode
	ErrorMessage string
}

// Error implements error.
func (e *ApplicationError) Error() string {
	if e.ErrorMessage == "" {
		return fmt.Sprintf("Application error %#x (%s)", e.ErrorCode, role(e.Remote))
	}
	return fmt.Sprintf("Application error %#x (%s): %s", e.ErrorCode, role(e.Remote), e.ErrorMessage)
}

// Unwrap makes errors.Is(err, net.ErrClosed) hold.
func (e *ApplicationError) Unwrap() error { return net.ErrClosed }

// Is matches another *ApplicationError with the same code and side.
func (e *ApplicationError) Is(target error) bool {
	t, ok := target.(*ApplicationError)
	return ok && t.ErrorCode == e.ErrorCode && t.Remote == e.Remote
}

// IdleTimeoutError is returned when no packet arrived within the idle timeout.
type IdleTimeoutError struct{}

// Error implements error.
func (e *IdleTimeoutError) Error() string { return "timeout: no recent network activity" }

// Timeout reports true: it is a net.Error timeout.
func (e *IdleTimeoutError) Timeout() bool { return true }

// Temporary reports false.
func (e *IdleTimeoutError) Temporary() bool { return false }

// Unwrap makes errors.Is(err, net.ErrClosed) hold.
func (e *IdleTimeoutError) Unwrap() error { return net.ErrClosed }

// HandshakeTimeoutError is returned when the handshake did not complete
// within Config.HandshakeIdleTimeout of silence.
type HandshakeTimeoutError struct{}

// Error implements error.
func (e *HandshakeTimeoutError) Error() string { return "timeout: handshake did not complete in time" }

// Timeout reports true: it is a net.Error timeout.
func (e *HandshakeTimeoutError) Timeout() bool { return true }

// Temporary reports false.
func (e *HandshakeTimeoutError) Temporary() bool { return false }

// Unwrap makes errors.Is(err, net.ErrClosed) hold.
func (e *HandshakeTimeoutError) Unwrap() error { return net.ErrClosed }

// StatelessResetError is returned when the peer sent a stateless reset.
type StatelessResetError struct{}

// Error implements error.
func (e *StatelessResetError) Error() string { return "received a stateless reset" }

// Unwrap makes errors.Is(err, net.ErrClosed) hold.
func (e *StatelessResetError) Unwrap() error { return net.ErrClosed }

// Timeout reports false.
func (e *StatelessResetError) Timeout() bool { return false }

// Temporary reports true, as in quic-go.
func (e *StatelessResetError) Temporary() bool { return true }

// VersionNegotiationError is returned when client and server share no version.
type VersionNegotiationError struct {
	Ours   []Version
	Theirs []Version
}

// Error implements error.
func (e *VersionNegotiationError) Error() string {
	return fmt.Sprintf("no compatible QUIC version found (we support %s, server offered %s)", e.Ours, e.Theirs)
}

// Unwrap makes errors.Is(err, net.ErrClosed) hold.
func (e *VersionNegotiationError) Unwrap() error { return net.ErrClosed }

// StreamError is returned by stream operations after the stream was reset
// (RESET_STREAM) or asked to stop (STOP_SENDING), locally or by the peer.
type StreamError struct {
	StreamID  StreamID
	ErrorCode StreamErrorCode
	Remote    bool
}

// Error implements error.
func (e *StreamError) Error() string {
	return fmt.Sprintf("stream %d canceled by %s with error code %d", e.StreamID, role(e.Remote), e.ErrorCode)
}

// Is matches another *StreamError with the same fields.
func (e *StreamError) Is(target error) bool {
	t, ok := target.(*StreamError)
	return ok && *t == *e
}

// StreamLimitReachedError is returned by OpenStream and OpenUniStream when the
// peer's stream limit does not allow another stream now.
type StreamLimitReachedError struct{}

// Error implements error.
func (e StreamLimitReachedError) Error() string { return "too many open streams" }

// Is matches StreamLimitReachedError targets, value or pointer: Open*
// returns a pointer, as quic-go does.
func (e StreamLimitReachedError) Is(target error) bool {
	switch target.(type) {
	case StreamLimitReachedError, *StreamLimitReachedError:
		return true
	}
	return false
}

// ErrTransportClosed is returned by Transport methods after Close, and is the
// error of connections the closing Transport tore down.
var ErrTransportClosed error = &transportClosedError{}

// transportClosedError is ErrTransportClosed, with the socket error that
// closed the Transport when one did (as in quic-go).
type transportClosedError struct{ err error }

func (e *transportClosedError) Error() string {
	if e.err != nil {
		return "quic: transport closed: " + e.err.Error()
	}
	return "quic: transport closed"
}
func (e *transportClosedError) Unwrap() []error { return []error{net.ErrClosed, e.err} }
func (e *transportClosedError) Is(target error) bool {
	_, ok := target.(*transportClosedError)
	return ok
}

// ErrStreamClosed is returned by Write after Close, and is the cause of
// the stream's context once Close was called, as in quic-go.
var ErrStreamClosed = errors.New("quic: stream closed")

// ErrWouldBlock is returned by TryWriteAll when the data cannot be queued
// at once.
var ErrWouldBlock = errors.New("quic: operation would block")

// ErrWriteLimitReached is returned by WriteWithLimit when its limiter
// accepted less than the whole slice.
var ErrWriteLimitReached = errors.New("quic: write limit reached")

// ErrServerClosed is returned by Listener.Accept after Close.
var ErrServerClosed = errors.New("quic: server closed")

// errDeadline is returned by stream operations whose deadline passed.
type deadlineError struct{}

func (deadlineError) Error() string        { return "deadline exceeded" }
func (deadlineError) Timeout() bool        { return true }
func (deadlineError) Temporary() bool      { return true }
func (deadlineError) Unwrap() error        { return os.ErrDeadlineExceeded }
func (deadlineError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

var errDeadline net.Error = deadlineError{}
