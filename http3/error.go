package http3

import (
	"errors"
	"fmt"
)

// Error is an HTTP/3 error: a connection or stream error with an error code
// from section 8.1 of RFC 9114. Remote tells whether the peer signalled it
// (a received RESET_STREAM or CONNECTION_CLOSE) or this endpoint detected
// it. errors.Is matches two Errors with the same code and origin.
type Error struct {
	Remote       bool
	ErrorCode    ErrCode
	ErrorMessage string

	err error // underlying cause, for errors.Is / errors.As
}

var _ error = (*Error)(nil)

// Error gives the text quic-go's http3.Error gives: the code's name, or
// "H3 error (0x...)" for a code without one, then " (local)" for an error
// this endpoint detected and the message, if any.
func (e *Error) Error() string {
	s := e.ErrorCode.name()
	if s == "" {
		s = fmt.Sprintf("H3 error (%#x)", uint64(e.ErrorCode))
	}
	if !e.Remote {
		s += " (local)"
	}
	if e.ErrorMessage != "" {
		s += ": " + e.ErrorMessage
	}
	return s
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.err }

// Is reports whether target is an *Error with the same code and origin.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.ErrorCode == e.ErrorCode && t.Remote == e.Remote
}

// newError returns a local error with a formatted message.
func newError(code ErrCode, format string, args ...any) *Error {
	return &Error{ErrorCode: code, ErrorMessage: fmt.Sprintf(format, args...)}
}

// wrapError returns a local error that keeps cause reachable through
// errors.Is and errors.As.
func wrapError(code ErrCode, cause error, format string, args ...any) *Error {
	return &Error{ErrorCode: code, ErrorMessage: fmt.Sprintf(format, args...), err: cause}
}

// errorCode returns the H3 code carried by err, or H3_INTERNAL_ERROR when
// err is not an H3 error (for example an I/O error of the stream).
func errorCode(err error) ErrCode {
	var e *Error
	if errors.As(err, &e) {
		return e.ErrorCode
	}
	return ErrCodeInternalError
}
