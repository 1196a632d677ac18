package http3

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

var varintBoundaries = []uint64{0, 63, 64, 16383, 16384, 1<<30 - 1, 1 << 30, 1<<62 - 1}

func TestFrameRoundTrip(t *testing.T) {
	var frames []frame
	for _, v := range varintBoundaries {
		frames = append(frames,
			cancelPushFrame{PushID: v},
			goAwayFrame{ID: v},
			maxPushIDFrame{PushID: v},
			pushPromiseFrame{PushID: v, FieldSection: []byte{0, 0, 0xd1}},
		)
	}
	frames = append(frames,
		headersFrame{FieldSection: []byte{0, 0, 0xd1, 0xd7}},
		headersFrame{FieldSection: nil},
		pushPromiseFrame{PushID: 7, FieldSection: []byte{}},
		settings{},
		settings{QPACKMaxTableCapacity: 4096, QPACKBlockedStreams: 100, MaxFieldSectionSize: 1 << 20,
			HasMaxFieldSectionSize: true, EnableConnectProtocol: true, H3Datagram: true},
	)
	for _, rk := range readerKinds {
		for _, f := range frames {
			enc := f.append(nil)
			fr := newFrameReader(rk.make(enc), 0)
			got, err := fr.readFrame()
			if err != nil {
				t.Fatalf("%s: readFrame(%T %x): %v", rk.name, f, enc, err)
			}
			if !reflect.DeepEqual(got, f) {
				t.Fatalf("%s: got %#v, want %#v", rk.name, got, f)
			}
			if _, err := fr.readFrame(); err != io.EOF {
				t.Fatalf("%s: after the frame: %v, want io.EOF", rk.name, err)
			}
		}
	}
}

func TestFrameEncodings(t *testing.T) {
	// Byte-exact layouts of RFC 9114 section 7.2: type varint, length
	// varint, payload.
	tests := []struct {
		f    frame
		want []byte
	}{
		{dataFrame{Length: 5}, []byte{0x00, 0x05}},
		{dataFrame{Length: 300}, []byte{0x00, 0x41, 0x2c}},
		{headersFrame{FieldSection: []byte{0, 0, 0xd1}}, []byte{0x01, 0x03, 0, 0, 0xd1}},
		{cancelPushFrame{PushID: 3}, []byte{0x03, 0x01, 0x03}},
		{settings{}, []byte{0x04, 0x00}},
		{pushPromiseFrame{PushID: 64, FieldSection: []byte{0, 0}}, []byte{0x05, 0x04, 0x40, 0x40, 0, 0}},
		{goAwayFrame{ID: 16384}, []byte{0x07, 0x04, 0x80, 0x00, 0x40, 0x00}},
		{maxPushIDFrame{PushID: 10}, []byte{0x0d, 0x01, 0x0a}},
	}
	for _, tt := range tests {
		if got := tt.f.append(nil); !bytes.Equal(got, tt.want) {
			t.Errorf("%#v: got %x, want %x", tt.f, got, tt.want)
		}
	}
}

func TestFrameReaderStreamsData(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 8192) // 128 KiB, over the limit
	for _, rk := range readerKinds {
		in := concat(dataFrame{Length: uint64(len(payload))}.append(nil), payload,
			dataFrame{Length: 3}.append(nil), []byte("xyz"),
			goAwayFrame{ID: 8}.append(nil))
		fr := newFrameReader(rk.make(in), 1024)
		fh, err := fr.next()
		if err != nil || fh != (frameHeader{Type: frameTypeData, Length: uint64(len(payload))}) {
			t.Fatalf("%s: next = %+v, %v", rk.name, fh, err)
		}
		got, err := io.ReadAll(fr)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("%s: DATA payload: %d bytes, %v", rk.name, len(got), err)
		}
		// The second DATA frame is left unread: next discards it.
		if fh, err = fr.next(); err != nil || fh.Type != frameTypeData {
			t.Fatalf("%s: next = %+v, %v", rk.name, fh, err)
		}
		f, err := fr.readFrame()
		if err != nil || f != (goAwayFrame{ID: 8}) {
			t.Fatalf("%s: readFrame = %#v, %v", rk.name, f, err)
		}
	}
}

// countingReader counts the bytes taken from the underlying reader.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestFrameReaderDoesNotBufferData(t *testing.T) {
	in := concat(dataFrame{Length: 1000}.append(nil), make([]byte, 1000))
	cr := &countingReader{r: bytes.NewReader(in)}
	fr := newFrameReader(cr, 0)
	if _, err := fr.next(); err != nil {
		t.Fatal(err)
	}
	if cr.n != 3 {
		t.Fatalf("next consumed %d bytes, want only the 3-byte frame header", cr.n)
	}
	buf := make([]byte, 10)
	if n, err := fr.Read(buf); n != 10 || err != nil || cr.n != 13 {
		t.Fatalf("Read = %d, %v; consumed %d", n, err, cr.n)
	}
}

func TestFrameReaderSkipsUnknownFrames(t *testing.T) {
	in := concat(
		appendFrameHeader(nil, 0x21, 3), []byte("abc"), // reserved 0x1f*0+0x21
		appendFrameHeader(nil, 0x21+0x1f*1000, 0),                // reserved, empty
		appendFrameHeader(nil, 0x4242, 2000), make([]byte, 2000), // unknown, above the limit
		appendFrameHeader(nil, 1<<62-1, 1), []byte{0xff},
		maxPushIDFrame{PushID: 4}.append(nil),
	)
	for _, rk := range readerKinds {
		fr := newFrameReader(rk.make(in), 100)
		var skipped []FrameType
		fr.onSkip = func(ft FrameType) error { skipped = append(skipped, ft); return nil }
		f, err := fr.readFrame()
		if err != nil || f != (maxPushIDFrame{PushID: 4}) {
			t.Fatalf("%s: readFrame = %#v, %v", rk.name, f, err)
		}
		want := []FrameType{0x21, 0x21 + 0x1f*1000, 0x4242, 1<<62 - 1}
		if !reflect.DeepEqual(skipped, want) {
			t.Fatalf("%s: skipped %v, want %v", rk.name, skipped, want)
		}
	}
}

func TestFrameReaderSkipHookError(t *testing.T) {
	in := concat(appendFrameHeader(nil, 0x21, 0), settings{}.append(nil))
	fr := newFrameReader(bytes.NewReader(in), 0)
	fr.onSkip = func(FrameType) error { return newError(ErrCodeMissingSettings, "x") }
	_, err := fr.next()
	wantCode(t, err, ErrCodeMissingSettings)
}

func TestFrameReaderHTTP2FrameTypes(t *testing.T) {
	// RFC 9114 section 7.2.8: PRIORITY, PING, WINDOW_UPDATE, CONTINUATION.
	for _, ft := range []FrameType{0x02, 0x06, 0x08, 0x09} {
		for _, rk := range readerKinds {
			in := concat(appendFrameHeader(nil, ft, 1), []byte{0})
			_, err := newFrameReader(rk.make(in), 0).next()
			wantCode(t, err, ErrCodeFrameUnexpected)
		}
	}
}

func TestFrameReaderErrors(t *testing.T) {
	big := uint64(defaultMaxFrameSize + 1)
	tests := []struct {
		name string
		in   []byte
		code ErrCode
	}{
		{"type only", []byte{0x07}, ErrCodeFrameError},
		{"truncated type", []byte{0x40}, ErrCodeFrameError},
		{"truncated length", []byte{0x07, 0x80, 0x00}, ErrCodeFrameError},
		{"truncated GOAWAY payload", []byte{0x07, 0x02, 0x40}, ErrCodeFrameError},
		{"truncated SETTINGS payload", []byte{0x04, 0x04, 0x06, 0x01}, ErrCodeFrameError},
		{"truncated HEADERS payload", []byte{0x01, 0x05, 0, 0}, ErrCodeFrameError},
		{"truncated unknown payload", []byte{0x21, 0x05, 0, 0}, ErrCodeFrameError},
		{"GOAWAY length 0", []byte{0x07, 0x00}, ErrCodeFrameError},
		{"GOAWAY length 9", concat([]byte{0x07, 0x09}, make([]byte, 9)), ErrCodeFrameError},
		{"GOAWAY extra byte", []byte{0x07, 0x02, 0x05, 0x00}, ErrCodeFrameError},
		{"GOAWAY varint longer than frame", []byte{0x07, 0x01, 0x40}, ErrCodeFrameError},
		{"CANCEL_PUSH extra byte", []byte{0x03, 0x02, 0x05, 0x00}, ErrCodeFrameError},
		{"CANCEL_PUSH length 0", []byte{0x03, 0x00}, ErrCodeFrameError},
		{"MAX_PUSH_ID extra byte", []byte{0x0d, 0x02, 0x05, 0x00}, ErrCodeFrameError},
		{"MAX_PUSH_ID varint longer than frame", []byte{0x0d, 0x02, 0x80, 0x00}, ErrCodeFrameError},
		{"PUSH_PROMISE without push ID", []byte{0x05, 0x00}, ErrCodeFrameError},
		{"PUSH_PROMISE truncated push ID", []byte{0x05, 0x01, 0x40}, ErrCodeFrameError},
		{"HEADERS over the limit", appendFrameHeader(nil, frameTypeHeaders, big), ErrCodeExcessiveLoad},
		{"SETTINGS over the limit", appendFrameHeader(nil, frameTypeSettings, big), ErrCodeExcessiveLoad},
		{"PUSH_PROMISE over the limit", appendFrameHeader(nil, frameTypePushPromise, big), ErrCodeExcessiveLoad},
		{"SETTINGS duplicate", []byte{0x04, 0x04, 0x06, 0x01, 0x06, 0x01}, ErrCodeSettingsError},
	}
	for _, tt := range tests {
		for _, rk := range readerKinds {
			_, err := newFrameReader(rk.make(tt.in), 0).readFrame()
			if err == nil {
				t.Fatalf("%s/%s: no error", tt.name, rk.name)
			}
			var e *Error
			if !errors.As(err, &e) || e.ErrorCode != tt.code {
				t.Fatalf("%s/%s: error %v, want %s", tt.name, rk.name, err, tt.code)
			}
		}
	}
}

func TestFrameReaderLimitBoundary(t *testing.T) {
	section := make([]byte, 100)
	in := headersFrame{FieldSection: section}.append(nil)
	if _, err := newFrameReader(bytes.NewReader(in), 100).readFrame(); err != nil {
		t.Fatalf("HEADERS at the limit: %v", err)
	}
	_, err := newFrameReader(bytes.NewReader(in), 99).readFrame()
	wantCode(t, err, ErrCodeExcessiveLoad)
}

func TestFrameReaderTruncatedData(t *testing.T) {
	for _, rk := range readerKinds {
		in := concat(dataFrame{Length: 10}.append(nil), []byte("short"))
		fr := newFrameReader(rk.make(in), 0)
		if _, err := fr.next(); err != nil {
			t.Fatal(err)
		}
		_, err := io.ReadAll(fr)
		wantCode(t, err, ErrCodeFrameError)
		if !errors.Is(err, errTruncatedFrame) {
			t.Fatalf("%v does not wrap errTruncatedFrame", err)
		}
		// Skipping the rest of a truncated DATA frame reports the same.
		fr = newFrameReader(rk.make(in), 0)
		if _, err := fr.next(); err != nil {
			t.Fatal(err)
		}
		_, err = fr.next()
		wantCode(t, err, ErrCodeFrameError)
	}
}

func TestFrameReaderCleanEOF(t *testing.T) {
	for _, rk := range readerKinds {
		if _, err := newFrameReader(rk.make(nil), 0).next(); err != io.EOF {
			t.Fatalf("%s: empty stream: %v, want io.EOF", rk.name, err)
		}
		in := concat(dataFrame{Length: 2}.append(nil), []byte("ok"))
		fr := newFrameReader(rk.make(in), 0)
		if _, err := fr.next(); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(fr); err != nil || string(b) != "ok" {
			t.Fatalf("%s: payload %q, %v", rk.name, b, err)
		}
		if _, err := fr.next(); err != io.EOF {
			t.Fatalf("%s: after last frame: %v, want io.EOF", rk.name, err)
		}
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestFrameReaderPassesStreamErrors(t *testing.T) {
	reset := errors.New("stream reset by peer")
	inputs := [][]byte{
		nil,                    // before a frame
		{0x07},                 // inside a header
		{0x01, 0x05, 0x00},     // inside a HEADERS payload
		{0x00, 0x05, 'a', 'b'}, // inside a DATA payload
		{0x21, 0x05, 'a'},      // inside a skipped frame
	}
	for _, in := range inputs {
		fr := newFrameReader(&failingReader{data: in, err: reset}, 0)
		var err error
		for err == nil {
			var fh frameHeader
			fh, err = fr.next()
			if err == nil && fh.Type == frameTypeData {
				_, err = io.ReadAll(fr)
			} else if err == nil {
				_, err = fr.readPayload(nil)
			}
		}
		if err != reset {
			t.Fatalf("input %x: error %v, want the stream's error", in, err)
		}
	}
}

func TestReadPayloadAppends(t *testing.T) {
	in := headersFrame{FieldSection: []byte("abc")}.append(nil)
	fr := newFrameReader(bytes.NewReader(in), 0)
	if _, err := fr.next(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2, 64)
	copy(buf, "xy")
	got, err := fr.readPayload(buf)
	if err != nil || string(got) != "xyabc" || &got[0] != &buf[0] {
		t.Fatalf("readPayload = %q, %v (reused buffer: %v)", got, err, &got[0] == &buf[0])
	}
}

func TestFrameTypeStrings(t *testing.T) {
	tests := map[FrameType]string{
		frameTypeData: "DATA", frameTypeHeaders: "HEADERS", frameTypeCancelPush: "CANCEL_PUSH",
		frameTypeSettings: "SETTINGS", frameTypePushPromise: "PUSH_PROMISE", frameTypeGoAway: "GOAWAY",
		frameTypeMaxPushID: "MAX_PUSH_ID", 0x02: "reserved HTTP/2 frame type 0x2",
		0x21: "reserved frame type 0x21", 0x22: "unknown frame type 0x22",
	}
	for ft, want := range tests {
		if got := ft.String(); got != want {
			t.Errorf("FrameType(%#x).String() = %q, want %q", uint64(ft), got, want)
		}
	}
}
