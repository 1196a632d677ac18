package http3

import "testing"

func TestRequestStreamSequences(t *testing.T) {
	const (
		H = frameTypeHeaders
		D = frameTypeData
		P = frameTypePushPromise
	)
	tests := []struct {
		name     string
		isClient bool
		interim  int // index of a HEADERS frame holding a 1xx response, -1 if none
		types    []FrameType
		code     ErrCode // 0: valid sequence
	}{
		{"headers only", false, -1, []FrameType{H}, 0},
		{"headers data trailers", false, -1, []FrameType{H, D, D, H}, 0},
		{"headers trailers", false, -1, []FrameType{H, H}, 0},
		{"response with push promises", true, -1, []FrameType{P, H, P, D, P, H, P}, 0},
		{"interim then final", true, 0, []FrameType{H, H, D, H}, 0},
		{"data first", false, -1, []FrameType{D}, ErrCodeFrameUnexpected},
		{"data after trailers", false, -1, []FrameType{H, D, H, D}, ErrCodeFrameUnexpected},
		{"headers after trailers", false, -1, []FrameType{H, H, H}, ErrCodeFrameUnexpected},
		{"data after interim", true, 0, []FrameType{H, D}, ErrCodeFrameUnexpected},
		{"push promise to a server", false, -1, []FrameType{H, P}, ErrCodeFrameUnexpected},
		{"settings", false, -1, []FrameType{H, frameTypeSettings}, ErrCodeFrameUnexpected},
		{"goaway", true, -1, []FrameType{frameTypeGoAway}, ErrCodeFrameUnexpected},
		{"max push id", false, -1, []FrameType{frameTypeMaxPushID}, ErrCodeFrameUnexpected},
		{"cancel push", true, -1, []FrameType{H, frameTypeCancelPush}, ErrCodeFrameUnexpected},
	}
	for _, tt := range tests {
		c := requestStreamChecker{isClient: tt.isClient}
		var err error
		for i, ft := range tt.types {
			if err = c.checkFrameType(ft); err != nil {
				break
			}
			if i == tt.interim {
				c.interimResponse()
			}
		}
		if tt.code == 0 {
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if err := c.onEnd(); err != nil {
				t.Fatalf("%s: onEnd: %v", tt.name, err)
			}
			continue
		}
		wantCode(t, err, tt.code)
	}
}

func TestRequestStreamEndsEarly(t *testing.T) {
	server := requestStreamChecker{}
	wantCode(t, server.onEnd(), ErrCodeRequestIncomplete)
	client := requestStreamChecker{isClient: true}
	wantCode(t, client.onEnd(), ErrCodeMessageError)
	client.checkFrameType(frameTypeHeaders)
	client.interimResponse()
	wantCode(t, client.onEnd(), ErrCodeMessageError)
}
