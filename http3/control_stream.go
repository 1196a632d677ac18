package http3

// controlStreamChecker enforces the frame sequence of the peer's control
// stream (RFC 9114 sections 6.2.1 and 7.2): SETTINGS first and only once,
// no DATA, HEADERS or PUSH_PROMISE, GOAWAY IDs that never increase,
// MAX_PUSH_ID values that never decrease, and CANCEL_PUSH within the
// allowed push IDs.
type controlStreamChecker struct {
	isClient bool // this endpoint is the client, so the peer is a server

	gotSettings   bool
	haveGoAway    bool
	lastGoAway    uint64
	haveMaxPushID bool
	maxPushID     uint64 // the peer's latest MAX_PUSH_ID (we are the server)

	haveSentMaxPushID bool
	sentMaxPushID     uint64 // our latest MAX_PUSH_ID (we are the client)
}

// onSkippedFrame is the frameReader.onSkip hook: even a reserved frame is
// not allowed before SETTINGS (section 6.2.1).
func (c *controlStreamChecker) onSkippedFrame(t FrameType) error {
	if !c.gotSettings {
		return newError(ErrCodeMissingSettings, "control stream starts with %s, not SETTINGS", t)
	}
	return nil
}

// checkFrameType is called with each frame header read from the control
// stream, before the payload is read.
func (c *controlStreamChecker) checkFrameType(t FrameType) error {
	if !c.gotSettings {
		if t != frameTypeSettings {
			return newError(ErrCodeMissingSettings, "control stream starts with %s, not SETTINGS", t)
		}
		c.gotSettings = true
		return nil
	}
	switch t {
	case frameTypeSettings:
		return newError(ErrCodeFrameUnexpected, "second SETTINGS frame on the control stream")
	case frameTypeData, frameTypeHeaders, frameTypePushPromise:
		return newError(ErrCodeFrameUnexpected, "%s frame on the control stream", t)
	case frameTypeMaxPushID:
		if c.isClient {
			return newError(ErrCodeFrameUnexpected, "server sent MAX_PUSH_ID")
		}
	}
	return nil
}

// onGoAway validates the ID of a received GOAWAY (section 7.2.6). A server
// names a client-initiated bidirectional stream; neither side may raise
// the ID of an earlier GOAWAY.
func (c *controlStreamChecker) onGoAway(id uint64) error {
	if c.isClient && id%4 != 0 {
		return newError(ErrCodeIDError, "GOAWAY names stream %d, not a client-initiated bidirectional stream", id)
	}
	if c.haveGoAway && id > c.lastGoAway {
		return newError(ErrCodeIDError, "GOAWAY ID %d is larger than the earlier %d", id, c.lastGoAway)
	}
	c.haveGoAway, c.lastGoAway = true, id
	return nil
}

// onMaxPushID validates a received MAX_PUSH_ID (section 7.2.7).
func (c *controlStreamChecker) onMaxPushID(id uint64) error {
	if c.haveMaxPushID && id < c.maxPushID {
		return newError(ErrCodeIDError, "MAX_PUSH_ID %d is smaller than the earlier %d", id, c.maxPushID)
	}
	c.haveMaxPushID, c.maxPushID = true, id
	return nil
}

// sentMaxPushIDFrame records a MAX_PUSH_ID this client sent, which bounds the
// push IDs a server may name.
func (c *controlStreamChecker) sentMaxPushIDFrame(id uint64) {
	c.haveSentMaxPushID, c.sentMaxPushID = true, id
}

// onCancelPush validates a received CANCEL_PUSH: it must not name a push
// ID above the limit currently allowed on the connection (section 7.2.3),
// the client's latest MAX_PUSH_ID in both directions. Without one no
// push ID is allowed.
func (c *controlStreamChecker) onCancelPush(id uint64) error {
	have, limit := c.haveMaxPushID, c.maxPushID
	if c.isClient {
		have, limit = c.haveSentMaxPushID, c.sentMaxPushID
	}
	if !have || id > limit {
		return newError(ErrCodeIDError, "CANCEL_PUSH for push ID %d, above the allowed maximum", id)
	}
	return nil
}

// onClose returns the error for the end of the peer's control stream: it
// is a critical stream and must never close (section 6.2.1).
func (c *controlStreamChecker) onClose() error {
	return newError(ErrCodeClosedCriticalStream, "peer closed its control stream")
}

// checkFrame runs the checks for a parsed control stream frame (from
// frameReader.readFrame, whose header already passed checkFrameType).
func (c *controlStreamChecker) checkFrame(f frame) error {
	switch f := f.(type) {
	case goAwayFrame:
		return c.onGoAway(f.ID)
	case maxPushIDFrame:
		return c.onMaxPushID(f.PushID)
	case cancelPushFrame:
		return c.onCancelPush(f.PushID)
	}
	return nil
}
