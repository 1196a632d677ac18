package http3

import (
	"errors"

	"github.com/turboretry/turboretry/quic"
)

// fromQUICError turns an error of the QUIC layer into an *Error when it
// carries an HTTP/3 code: a stream reset (RESET_STREAM or STOP_SENDING) or
// an application close of the connection. Other errors are returned as
// they are.
func fromQUICError(err error) error {
	if err == nil {
		return nil // without errors.As, whose targets escape: no allocation
	}
	var se *quic.StreamError
	if errors.As(err, &se) {
		return &Error{Remote: se.Remote, ErrorCode: ErrCode(se.ErrorCode), err: err}
	}
	var ae *quic.ApplicationError
	if errors.As(err, &ae) {
		return &Error{Remote: ae.Remote, ErrorCode: ErrCode(ae.ErrorCode), ErrorMessage: ae.ErrorMessage, err: err}
	}
	return err
}

// isConnectionError reports whether a locally detected error on a request
// stream must close the whole connection (RFC 9114 sections 4.1.2, 7.1,
// 7.2.8 and RFC 9204 section 2.2.3) rather than only reset the stream.
func isConnectionError(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Remote {
		return false
	}
	switch e.ErrorCode {
	case ErrCodeFrameUnexpected, ErrCodeFrameError, ErrCodeQPACKDecompressionFailed,
		ErrCodeGeneralProtocolError, ErrCodeIDError, ErrCodeSettingsError,
		ErrCodeMissingSettings, ErrCodeStreamCreationError, ErrCodeClosedCriticalStream:
		return true
	}
	return false
}

// resetStream aborts both directions of a request stream with code.
func resetStream(s *quic.Stream, code ErrCode) {
	s.CancelRead(quic.StreamErrorCode(code))
	s.CancelWrite(quic.StreamErrorCode(code))
}

// isOwnCancelRead reports whether err is what a read returns after this
// endpoint's own CancelRead (the application's, or ours for it): only the
// receive side was stopped, on purpose, so the send side must go on, as
// in quic-go; the data and FIN written on it still reach the peer.
func isOwnCancelRead(err error) bool {
	var se *quic.StreamError
	return errors.As(err, &se) && !se.Remote
}

// isStreamReset reports whether err is the peer's reset of a stream.
func isStreamReset(err error) bool {
	var se *quic.StreamError
	return errors.As(err, &se) && se.Remote
}
