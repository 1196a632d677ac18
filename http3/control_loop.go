package http3

import (
	"errors"
	"io"
	"os"

	"github.com/turboretry/turboretry/quic"
)

// controlStreamReader reads the peer's control stream (after its type),
// checks every frame (RFC 9114 sections 6.2.1 and 7.2) and hands the valid
// ones to onFrame. Its state lives here rather than on a goroutine's
// stack, so that a server can stop reading while the stream is quiet and
// go on later (uniStreams.readControl).
type controlStreamReader struct {
	fr      *frameReader
	check   controlStreamChecker
	onFrame func(frame)
}

// newControlStreamReader reads r; log records the frames as stream id's.
func newControlStreamReader(r io.Reader, isClient bool, log *qlogProducer, id quic.StreamID, onFrame func(frame)) *controlStreamReader {
	cr := &controlStreamReader{check: controlStreamChecker{isClient: isClient}, onFrame: onFrame}
	cr.fr = newFrameReader(r, maxSettingsFrameSize)
	cr.fr.qlog, cr.fr.qlogID = log, id
	cr.fr.onSkip = cr.check.onSkippedFrame
	return cr
}

// run reads until the stream ends, with step's error.
func (cr *controlStreamReader) run() error {
	for {
		if done, err := cr.step(); done {
			return err
		}
	}
}

// step reads, checks and hands over the next frame. done means reading
// ends, with the *Error that must close the connection, or nil when the
// connection itself went away.
func (cr *controlStreamReader) step() (done bool, err error) {
	f, err := cr.fr.readFrameChecked(cr.check.checkFrameType)
	if err == nil {
		err = cr.check.checkFrame(f)
	}
	if err == io.EOF || isStreamReset(err) {
		err = cr.check.onClose()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The caller's deadline for SETTINGS (section 6.2.1: the first
		// frame of the control stream), cleared once it is read, passed.
		return true, wrapError(ErrCodeMissingSettings, errSettingsTimeout, "no SETTINGS frame on the control stream in time")
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return true, e
		}
		return true, nil // the connection closed
	}
	cr.onFrame(f)
	return false, nil
}
