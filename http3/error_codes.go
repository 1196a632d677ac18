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

var errCodeNames = map[ErrCode]string{
	ErrCodeNoError:                  "H3_NO_ERROR",
	ErrCodeGeneralProtocolError:     "H3_GENERAL_PROTOCOL_ERROR",
	ErrCodeInternalError:            "H3_INTERNAL_ERROR",
	ErrCodeStreamCreationError:      "H3_STREAM_CREATION_ERROR",
	ErrCodeClosedCriticalStream:     "H3_CLOSED_CRITICAL_STREAM",
	ErrCodeFrameUnexpected:          "H3_FRAME_UNEXPECTED",
	ErrCodeFrameError:               "H3_FRAME_ERROR",
	ErrCodeExcessiveLoad:            "H3_EXCESSIVE_LOAD",
	ErrCodeIDError:                  "H3_ID_ERROR",
	ErrCodeSettingsError:            "H3_SETTINGS_ERROR",
	ErrCodeMissingSettings:          "H3_MISSING_SETTINGS",
	ErrCodeRequestRejected:          "H3_REQUEST_REJECTED",
	ErrCodeRequestCanceled:          "H3_REQUEST_CANCELLED",
	ErrCodeRequestIncomplete:        "H3_REQUEST_INCOMPLETE",
	ErrCodeMessageError:             "H3_MESSAGE_ERROR",
	ErrCodeConnectError:             "H3_CONNECT_ERROR",
	ErrCodeVersionFallback:          "H3_VERSION_FALLBACK",
	ErrCodeDatagramError:            "H3_DATAGRAM_ERROR",
	ErrCodeQPACKDecompressionFailed: "QPACK_DECOMPRESSION_FAILED",
	ErrCodeQPACKEncoderStreamError:  "QPACK_ENCODER_STREAM_ERROR",
	ErrCodeQPACKDecoderStreamError:  "QPACK_DECODER_STREAM_ERROR",
}

// String returns the RFC name of the code, or a hexadecimal description of
// codes this package does not know (including the reserved 0x1f*N+0x21
// greasing codes of section 8.1, which carry no meaning).
func (e ErrCode) String() string {
	if s, ok := errCodeNames[e]; ok {
		return s
	}
	if isReservedCodePoint(uint64(e)) {
		return fmt.Sprintf("reserved H3 error code %#x", uint64(e))
	}
	return fmt.Sprintf("unknown H3 error code %#x", uint64(e))
}

// isReservedCodePoint reports whether v has the form 0x1f*N+0x21, the
// pattern RFC 9114 reserves for greasing frame types, stream types, setting
// identifiers and error codes.
func isReservedCodePoint(v uint64) bool {
	return v >= 0x21 && (v-0x21)%0x1f == 0
}
