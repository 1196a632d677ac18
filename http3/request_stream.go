package http3

// requestStreamChecker enforces the frame sequence of a request or push
// stream (RFC 9114 section 4.1): HEADERS, then DATA frames, then at most
// one trailing HEADERS; a response may be preceded by interim (1xx)
// responses. Control-stream-only frames are H3_FRAME_UNEXPECTED here
// (sections 7.2.3, 7.2.4, 7.2.6, 7.2.7), as is a PUSH_PROMISE received by a
// server (section 7.2.5).
type requestStreamChecker struct {
	isClient bool // this endpoint is the client, reading a response
	state    requestStreamState
}

type requestStreamState uint8

const (
	awaitingHeaders requestStreamState = iota
	inContent                          // after the header section, DATA allowed
	afterTrailers                      // after the trailer section, nothing allowed
)

// checkFrameType is called with each frame header read from the stream.
func (c *requestStreamChecker) checkFrameType(t FrameType) error {
	switch t {
	case frameTypeHeaders:
		switch c.state {
		case awaitingHeaders:
			c.state = inContent
		case inContent:
			c.state = afterTrailers
		default:
			return newError(ErrCodeFrameUnexpected, "HEADERS frame after the trailer section")
		}
	case frameTypeData:
		switch c.state {
		case awaitingHeaders:
			return newError(ErrCodeFrameUnexpected, "DATA frame before the header section")
		case afterTrailers:
			return newError(ErrCodeFrameUnexpected, "DATA frame after the trailer section")
		}
	case frameTypePushPromise:
		if !c.isClient {
			return newError(ErrCodeFrameUnexpected, "client sent PUSH_PROMISE")
		}
	default:
		return newError(ErrCodeFrameUnexpected, "%s frame on a request stream", t)
	}
	return nil
}

// interimResponse tells the checker that the HEADERS frame just read held
// an interim (1xx) response, so the final response's HEADERS comes next.
func (c *requestStreamChecker) interimResponse() {
	if c.state == inContent {
		c.state = awaitingHeaders
	}
}

// onEnd checks the end of the stream: a request or response without a
// header section is incomplete (section 4.1.2).
func (c *requestStreamChecker) onEnd() error {
	if c.state == awaitingHeaders {
		if c.isClient {
			return newError(ErrCodeMessageError, "response stream ended before the header section")
		}
		return newError(ErrCodeRequestIncomplete, "request stream ended before the header section")
	}
	return nil
}
