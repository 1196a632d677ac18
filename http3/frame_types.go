package http3

import "fmt"

// FrameType is the type of an HTTP/3 frame (RFC 9114 section 7.2).
type FrameType uint64

// Frame types defined by RFC 9114 section 7.2.
const (
	frameTypeData        FrameType = 0x00
	frameTypeHeaders     FrameType = 0x01
	frameTypeCancelPush  FrameType = 0x03
	frameTypeSettings    FrameType = 0x04
	frameTypePushPromise FrameType = 0x05
	frameTypeGoAway      FrameType = 0x07
	frameTypeMaxPushID   FrameType = 0x0d
)

// HTTP/2 frame types with no HTTP/3 equivalent (RFC 9114 section 7.2.8):
// PRIORITY, PING, WINDOW_UPDATE and CONTINUATION. Receiving one is a
// connection error of type H3_FRAME_UNEXPECTED.
const (
	frameTypeH2Priority     FrameType = 0x02
	frameTypeH2Ping         FrameType = 0x06
	frameTypeH2WindowUpdate FrameType = 0x08
	frameTypeH2Continuation FrameType = 0x09
)

// String returns the RFC name of the frame type.
func (t FrameType) String() string {
	switch t {
	case frameTypeData:
		return "DATA"
	case frameTypeHeaders:
		return "HEADERS"
	case frameTypeCancelPush:
		return "CANCEL_PUSH"
	case frameTypeSettings:
		return "SETTINGS"
	case frameTypePushPromise:
		return "PUSH_PROMISE"
	case frameTypeGoAway:
		return "GOAWAY"
	case frameTypeMaxPushID:
		return "MAX_PUSH_ID"
	case frameTypeH2Priority, frameTypeH2Ping, frameTypeH2WindowUpdate, frameTypeH2Continuation:
		return fmt.Sprintf("reserved HTTP/2 frame type %#x", uint64(t))
	}
	if isReservedCodePoint(uint64(t)) {
		return fmt.Sprintf("reserved frame type %#x", uint64(t))
	}
	return fmt.Sprintf("unknown frame type %#x", uint64(t))
}

// isKnown reports whether this package parses frames of type t; all other
// types except the HTTP/2 ones are skipped (section 7.2.8).
func (t FrameType) isKnown() bool {
	switch t {
	case frameTypeData, frameTypeHeaders, frameTypeCancelPush, frameTypeSettings,
		frameTypePushPromise, frameTypeGoAway, frameTypeMaxPushID:
		return true
	}
	return false
}

// isHTTP2Only reports whether t is an HTTP/2 frame type that HTTP/3
// reserves and forbids.
func (t FrameType) isHTTP2Only() bool {
	switch t {
	case frameTypeH2Priority, frameTypeH2Ping, frameTypeH2WindowUpdate, frameTypeH2Continuation:
		return true
	}
	return false
}

// hasSingleVarintPayload reports whether the payload of t is exactly one
// variable-length integer: CANCEL_PUSH, GOAWAY and MAX_PUSH_ID.
func (t FrameType) hasSingleVarintPayload() bool {
	return t == frameTypeCancelPush || t == frameTypeGoAway || t == frameTypeMaxPushID
}
