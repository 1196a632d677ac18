// Package qerr defines QUIC transport error codes (RFC 9000 section 20.1)
// and the error value the transport closes a connection with.
package qerr

import "strconv"

// TransportErrorCode is a QUIC transport error code, carried in
// CONNECTION_CLOSE frames of type 0x1c (RFC 9000 section 20.1).
type TransportErrorCode uint64

// Transport error codes of RFC 9000 section 20.1, plus the version
// negotiation error of RFC 9368.
const (
	NoError                 TransportErrorCode = 0x00
	InternalError           TransportErrorCode = 0x01
	ConnectionRefused       TransportErrorCode = 0x02
	FlowControlError        TransportErrorCode = 0x03
	StreamLimitError        TransportErrorCode = 0x04
	StreamStateError        TransportErrorCode = 0x05
	FinalSizeError          TransportErrorCode = 0x06
	FrameEncodingError      TransportErrorCode = 0x07
	TransportParameterError TransportErrorCode = 0x08
	ConnectionIDLimitError  TransportErrorCode = 0x09
	ProtocolViolation       TransportErrorCode = 0x0a
	InvalidToken            TransportErrorCode = 0x0b
	ApplicationError        TransportErrorCode = 0x0c
	CryptoBufferExceeded    TransportErrorCode = 0x0d
	KeyUpdateError          TransportErrorCode = 0x0e
	AEADLimitReached        TransportErrorCode = 0x0f
	NoViablePath            TransportErrorCode = 0x10
	// VersionNegotiationError is defined by RFC 9368 section 10.2.
	VersionNegotiationError TransportErrorCode = 0x11

	// CryptoErrorBase is the first code of the CRYPTO_ERROR range: the
	// low byte carries a TLS alert (RFC 9001 section 4.8).
	CryptoErrorBase TransportErrorCode = 0x0100
	// CryptoErrorMax is the last code of the CRYPTO_ERROR range.
	CryptoErrorMax TransportErrorCode = 0x01ff
)

// CryptoError returns the CRYPTO_ERROR code that carries the TLS alert.
func CryptoError(alert uint8) TransportErrorCode {
	return CryptoErrorBase + TransportErrorCode(alert)
}

// IsCryptoError reports whether c lies in the CRYPTO_ERROR range.
func (c TransportErrorCode) IsCryptoError() bool {
	return c >= CryptoErrorBase && c <= CryptoErrorMax
}

// TLSAlert returns the TLS alert carried by a CRYPTO_ERROR code; ok is
// false for codes outside that range.
func (c TransportErrorCode) TLSAlert() (alert uint8, ok bool) {
	if !c.IsCryptoError() {
		return 0, false
	}
	return uint8(c - CryptoErrorBase), true
}

var codeNames = [...]string{
	NoError:                 "NO_ERROR",
	InternalError:           "INTERNAL_ERROR",
	ConnectionRefused:       "CONNECTION_REFUSED",
	FlowControlError:        "FLOW_CONTROL_ERROR",
	StreamLimitError:        "STREAM_LIMIT_ERROR",
	StreamStateError:        "STREAM_STATE_ERROR",
	FinalSizeError:          "FINAL_SIZE_ERROR",
	FrameEncodingError:      "FRAME_ENCODING_ERROR",
	TransportParameterError: "TRANSPORT_PARAMETER_ERROR",
	ConnectionIDLimitError:  "CONNECTION_ID_LIMIT_ERROR",
	ProtocolViolation:       "PROTOCOL_VIOLATION",
	InvalidToken:            "INVALID_TOKEN",
	ApplicationError:        "APPLICATION_ERROR",
	CryptoBufferExceeded:    "CRYPTO_BUFFER_EXCEEDED",
	KeyUpdateError:          "KEY_UPDATE_ERROR",
	AEADLimitReached:        "AEAD_LIMIT_REACHED",
	NoViablePath:            "NO_VIABLE_PATH",
	VersionNegotiationError: "VERSION_NEGOTIATION_ERROR",
}

// String returns the RFC name of the code, "CRYPTO_ERROR (alert N)" for
// the crypto range and the hexadecimal value for unknown codes.
func (c TransportErrorCode) String() string {
	if c < TransportErrorCode(len(codeNames)) {
		return codeNames[c]
	}
	if alert, ok := c.TLSAlert(); ok {
		return "CRYPTO_ERROR (alert " + strconv.Itoa(int(alert)) + ")"
	}
	return "unknown error code 0x" + strconv.FormatUint(uint64(c), 16)
}
