package http3

import (
	"bytes"
	"io"
	"testing"
)

// runControlStream reads frames from a control stream the way the
// connection will: header check, payload parse, frame check.
func runControlStream(c *controlStreamChecker, in []byte) error {
	fr := newFrameReader(bytes.NewReader(in), 0)
	fr.onSkip = c.onSkippedFrame
	for {
		fh, err := fr.next()
		if err == io.EOF {
			return c.onClose()
		}
		if err != nil {
			return err
		}
		if err := c.checkFrameType(fh.Type); err != nil {
			return err
		}
		p, err := fr.readPayload(nil)
		if err != nil {
			return err
		}
		switch fh.Type {
		case frameTypeSettings:
			if _, err := parseSettings(p); err != nil {
				return err
			}
		case frameTypeGoAway, frameTypeMaxPushID, frameTypeCancelPush:
			v, err := parseSingleVarintPayload(fh.Type, p)
			if err != nil {
				return err
			}
			var f frame = cancelPushFrame{PushID: v}
			if fh.Type == frameTypeGoAway {
				f = goAwayFrame{ID: v}
			} else if fh.Type == frameTypeMaxPushID {
				f = maxPushIDFrame{PushID: v}
			}
			if err := c.checkFrame(f); err != nil {
				return err
			}
		}
	}
}

func TestControlStreamCancelPushToClient(t *testing.T) {
	c := &controlStreamChecker{isClient: true}
	c.sentMaxPushIDFrame(5)
	in := concat(settings{}.append(nil), cancelPushFrame{PushID: 5}.append(nil), cancelPushFrame{PushID: 6}.append(nil))
	wantCode(t, runControlStream(c, in), ErrCodeIDError)
	c = &controlStreamChecker{isClient: true}
	c.sentMaxPushIDFrame(6)
	wantCode(t, runControlStream(c, in), ErrCodeClosedCriticalStream)
}

func TestControlStreamSequences(t *testing.T) {
	set := settings{H3Datagram: true}.append(nil)
	reserved := concat(appendFrameHeader(nil, 0x21, 1), []byte{0})
	tests := []struct {
		name     string
		isClient bool
		frames   [][]byte
		code     ErrCode
	}{
		{"settings only, then close", false, [][]byte{set}, ErrCodeClosedCriticalStream},
		{"empty stream", false, nil, ErrCodeClosedCriticalStream},
		{"all control frames", false, [][]byte{set, reserved, goAwayFrame{ID: 9}.append(nil),
			maxPushIDFrame{PushID: 3}.append(nil), cancelPushFrame{PushID: 1}.append(nil), cancelPushFrame{PushID: 3}.append(nil),
			maxPushIDFrame{PushID: 3}.append(nil), maxPushIDFrame{PushID: 10}.append(nil),
			goAwayFrame{ID: 9}.append(nil), goAwayFrame{ID: 2}.append(nil)}, ErrCodeClosedCriticalStream},
		{"GOAWAY first", false, [][]byte{goAwayFrame{ID: 0}.append(nil)}, ErrCodeMissingSettings},
		{"reserved frame first", false, [][]byte{reserved, set}, ErrCodeMissingSettings},
		{"DATA first", false, [][]byte{dataFrame{Length: 0}.append(nil)}, ErrCodeMissingSettings},
		{"second SETTINGS", false, [][]byte{set, set}, ErrCodeFrameUnexpected},
		{"DATA", false, [][]byte{set, dataFrame{Length: 0}.append(nil)}, ErrCodeFrameUnexpected},
		{"HEADERS", true, [][]byte{set, headersFrame{FieldSection: []byte{0, 0}}.append(nil)}, ErrCodeFrameUnexpected},
		{"PUSH_PROMISE", true, [][]byte{set, pushPromiseFrame{PushID: 0, FieldSection: []byte{0, 0}}.append(nil)}, ErrCodeFrameUnexpected},
		{"MAX_PUSH_ID to a client", true, [][]byte{set, maxPushIDFrame{PushID: 1}.append(nil)}, ErrCodeFrameUnexpected},
		{"MAX_PUSH_ID decreases", false, [][]byte{set, maxPushIDFrame{PushID: 5}.append(nil), maxPushIDFrame{PushID: 4}.append(nil)}, ErrCodeIDError},
		{"GOAWAY increases", false, [][]byte{set, goAwayFrame{ID: 4}.append(nil), goAwayFrame{ID: 5}.append(nil)}, ErrCodeIDError},
		{"GOAWAY from server decreases", true, [][]byte{set, goAwayFrame{ID: 8}.append(nil), goAwayFrame{ID: 4}.append(nil)}, ErrCodeClosedCriticalStream},
		{"GOAWAY from server increases", true, [][]byte{set, goAwayFrame{ID: 4}.append(nil), goAwayFrame{ID: 8}.append(nil)}, ErrCodeIDError},
		{"GOAWAY from server names a unidirectional stream", true, [][]byte{set, goAwayFrame{ID: 2}.append(nil)}, ErrCodeIDError},
		{"GOAWAY from server names a server stream", true, [][]byte{set, goAwayFrame{ID: 1}.append(nil)}, ErrCodeIDError},
		{"CANCEL_PUSH before MAX_PUSH_ID", false, [][]byte{set, cancelPushFrame{PushID: 0}.append(nil)}, ErrCodeIDError},
		{"CANCEL_PUSH above MAX_PUSH_ID", false, [][]byte{set, maxPushIDFrame{PushID: 3}.append(nil), cancelPushFrame{PushID: 4}.append(nil)}, ErrCodeIDError},
		{"CANCEL_PUSH to a client that allowed no push", true, [][]byte{set, cancelPushFrame{PushID: 0}.append(nil)}, ErrCodeIDError},
		{"bad SETTINGS", false, [][]byte{concat([]byte{0x04, 0x02}, appendSetting(nil, 0x02, 0))}, ErrCodeSettingsError},
		{"HTTP/2 frame", false, [][]byte{set, {0x06, 0x00}}, ErrCodeFrameUnexpected},
	}
	for _, tt := range tests {
		c := &controlStreamChecker{isClient: tt.isClient}
		err := runControlStream(c, concat(tt.frames...))
		if err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		if errorCode(err) != tt.code {
			t.Fatalf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
}
