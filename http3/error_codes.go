package http3

import (
	"fmt"

	"github.com/turboretry/turboretry/quic"
)

// ErrCode is an HTTP/3 error code, carried in QUIC RESET_STREAM,
// STOP_SENDING and CONNECTION_CLOSE frames (RFC 9114 section 8.1); its
// type is quic.ApplicationErrorCode's, as in quic-go.
type ErrCode quic.ApplicationErrorCode

// HTTP/3 error codes (RFC 9114 section 8.1), the HTTP datagram error
// (RFC 9297 section 2.1) and the QPACK error codes (RFC 9204 section 6).
const (
	ErrCodeNoError                  ErrCode = 0x100
	ErrCodeGeneralProtocolError     ErrCode = 0x101
	ErrCodeInternalError            ErrCode = 0x102
	ErrCodeStreamCreationError      ErrCode = 0x103
	ErrCodeClosedCriticalStream     ErrCode = 0x104
	ErrCodeFrameUnexpected          ErrCode = 0x105
	ErrCodeFrameError               ErrCode = 0x106
	ErrCodeExcessiveLoad            ErrCode = 0x107
	ErrCodeIDError                  ErrCode = 0x108
	ErrCodeSettingsError            ErrCode = 0x109
	ErrCodeMissingSettings          ErrCode = 0x10a
	ErrCodeRequestRejected          ErrCode = 0x10b
	ErrCodeRequestCanceled          ErrCode = 0x10c
	ErrCodeRequestIncomplete        ErrCode = 0x10d
	ErrCodeMessageError             ErrCode = 0x10e
	ErrCodeConnectError             ErrCode = 0x10f
	ErrCodeVersionFallback          ErrCode = 0x110
	ErrCodeDatagramError            ErrCode = 0x33
	ErrCodeQPACKDecompressionFailed ErrCode = 0x200
	ErrCodeQPACKEncoderStreamError  ErrCode = 0x201
	ErrCodeQPACKDecoderStreamError  ErrCode = 0x202
)

// String returns the code's name as quic-go's http3 spells it, so that
// programs that print or compare it see the same text: the RFC names
// (except H3_INCOMPLETE_REQUEST for 0x10d), and for any other code,
// QPACK_ENCODER_STREAM_ERROR and QPACK_DECODER_STREAM_ERROR included,
// "unknown error code: " with the low 16 bits in hexadecimal.
func (e ErrCode) String() string {
	if s := e.name(); s != "" {
		return s
	}
	return fmt.Sprintf("unknown error code: %#x", uint16(e))
}

// name returns the name String gives a code quic-go knows, or "" for the
// others.
func (e ErrCode) name() string {
	switch e {
	case ErrCodeNoError:
		return "H3_NO_ERROR"
	case ErrCodeGeneralProtocolError:
		return "H3_GENERAL_PROTOCOL_ERROR"
	case ErrCodeInternalError:
		return "H3_INTERNAL_ERROR"
	case ErrCodeStreamCreationError:
		return "H3_STREAM_CREATION_ERROR"
	case ErrCodeClosedCriticalStream:
		return "H3_CLOSED_CRITICAL_STREAM"
	case ErrCodeFrameUnexpected:
		return "H3_FRAME_UNEXPECTED"
	case ErrCodeFrameError:
		return "H3_FRAME_ERROR"
	case ErrCodeExcessiveLoad:
		return "H3_EXCESSIVE_LOAD"
	case ErrCodeIDError:
		return "H3_ID_ERROR"
	case ErrCodeSettingsError:
		return "H3_SETTINGS_ERROR"
	case ErrCodeMissingSettings:
		return "H3_MISSING_SETTINGS"
	case ErrCodeRequestRejected:
		return "H3_REQUEST_REJECTED"
	case ErrCodeRequestCanceled:
		return "H3_REQUEST_CANCELLED"
	case ErrCodeRequestIncomplete:
		return "H3_INCOMPLETE_REQUEST" // quic-go's spelling; RFC 9114 says H3_REQUEST_INCOMPLETE
	case ErrCodeMessageError:
		return "H3_MESSAGE_ERROR"
	case ErrCodeConnectError:
		return "H3_CONNECT_ERROR"
	case ErrCodeVersionFallback:
		return "H3_VERSION_FALLBACK"
	case ErrCodeDatagramError:
		return "H3_DATAGRAM_ERROR"
	case ErrCodeQPACKDecompressionFailed:
		return "QPACK_DECOMPRESSION_FAILED"
	}
	return ""
}

// isReservedCodePoint reports whether v has the form 0x1f*N+0x21, the
// pattern RFC 9114 reserves for greasing frame types, stream types, setting
// identifiers and error codes.
func isReservedCodePoint(v uint64) bool {
	return v >= 0x21 && (v-0x21)%0x1f == 0
}
