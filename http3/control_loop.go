package http3

import (
	"errors"
	"io"
	"os"

	"github.com/turboretry/turboretry/quic"
)

// serveControlStream reads the peer's control stream (after its type),
// checks every frame (RFC 9114 sections 6.2.1 and 7.2) and hands the valid
// ones to onFrame; log records them as stream id's. It returns the *Error
// that must close the connection, or nil when the connection itself went
// away.
func serveControlStream(r io.Reader, isClient bool, log *qlogProducer, id quic.StreamID, onFrame func(frame)) error {
	check := controlStreamChecker{isClient: isClient}
	fr := newFrameReader(r, maxSettingsFrameSize)
	fr.qlog, fr.qlogID = log, id
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
