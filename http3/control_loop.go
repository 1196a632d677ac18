package http3

import (
	"errors"
	"io"
	"os"
)

// serveControlStream reads the peer's control stream (after its type),
// checks every frame (RFC 9114 sections 6.2.1 and 7.2) and hands the valid
// ones to onFrame. It returns the *Error that must close the connection,
// or nil when the connection itself went away.
func serveControlStream(r io.Reader, isClient bool, onFrame func(frame)) error {
	check := controlStreamChecker{isClient: isClient}
	fr := newFrameReader(r, maxSettingsFrameSize)
	fr.onSkip = check.onSkippedFrame
	for {
		f, err := fr.readFrameChecked(check.checkFrameType)
		if err == nil {
			err = check.checkFrame(f)
		}
		if err == io.EOF || isStreamReset(err) {
			err = check.onClose()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The caller's deadline for SETTINGS (section 6.2.1: the
			// first frame of the control stream), cleared once it is
			// read, passed.
			return wrapError(ErrCodeMissingSettings, errSettingsTimeout, "no SETTINGS frame on the control stream in time")
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return e
			}
			return nil // the connection closed
		}
		onFrame(f)
	}
}
