package http3

import (
	"bytes"
	"maps"
	"testing"
)

func TestSettingsRoundTrip(t *testing.T) {
	tests := []settings{
		{},
		{QPACKMaxTableCapacity: 1},
		{QPACKBlockedStreams: 1<<62 - 1},
		{MaxFieldSectionSize: 0, HasMaxFieldSectionSize: true},
		{MaxFieldSectionSize: 16 << 10, HasMaxFieldSectionSize: true},
		{EnableConnectProtocol: true},
		{H3Datagram: true},
		{QPACKMaxTableCapacity: 4096, QPACKBlockedStreams: 16, MaxFieldSectionSize: 1 << 40,
			HasMaxFieldSectionSize: true, EnableConnectProtocol: true, H3Datagram: true},
	}
	for _, s := range tests {
		frame := s.append(nil)
		if frame[0] != byte(frameTypeSettings) {
			t.Fatalf("%+v: frame type %#x", s, frame[0])
		}
		payload := frame[1+varintLenOfFirst(frame[1]):]
		if uint64(len(payload)) != s.payloadLen() {
			t.Fatalf("%+v: payload %d bytes, payloadLen %d", s, len(payload), s.payloadLen())
		}
		got, err := parseSettings(payload)
		if err != nil || got != s {
			t.Fatalf("%+v: parsed %+v, %v", s, got, err)
		}
	}
}

func varintLenOfFirst(b byte) int { return 1 << (b >> 6) }

func TestSettingsEncoding(t *testing.T) {
	s := settings{MaxFieldSectionSize: 16384, HasMaxFieldSectionSize: true, H3Datagram: true}
	want := []byte{
		0x04, 0x07, // SETTINGS, 7 bytes of payload
		0x06, 0x80, 0x00, 0x40, 0x00, // SETTINGS_MAX_FIELD_SECTION_SIZE = 16384 (4-byte varint)
		0x33, 0x01, // SETTINGS_H3_DATAGRAM = 1
	}
	if got := s.append(nil); !bytes.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

func TestSettingsIgnoresUnknown(t *testing.T) {
	p := concat(
		appendSetting(nil, 0x21, 7),               // reserved (greasing) identifier
		appendSetting(nil, 0x21+0x1f*99, 1<<62-1), // another reserved one
		appendSetting(nil, 0x1234, 5),             // unknown
		appendSetting(nil, settingQPACKBlockedStreams, 3),
		appendSetting(nil, 0x00, 1), // 0x00 is reserved in HTTP/3 but not an HTTP/2 id
	)
	got, err := parseSettings(p)
	if err != nil {
		t.Fatal(err)
	}
	other := got.Other
	got.Other = ""
	if got != (settings{QPACKBlockedStreams: 3}) {
		t.Fatalf("parseSettings = %+v", got)
	}
	// The settings we do not interpret are kept, for Settings.Other
	// (which also shows the QPACK ones, as quic-go's does).
	wantOther := map[uint64]uint64{0x21: 7, 0x21 + 0x1f*99: 1<<62 - 1, 0x1234: 5, settingQPACKBlockedStreams: 3, 0x00: 1}
	got.Other = other
	if pub := got.public(); !maps.Equal(pub.Other, wantOther) || pub.EnableDatagrams || pub.EnableExtendedConnect {
		t.Fatalf("public settings %+v, want Other %v", pub, wantOther)
	}
	// They go out again as they came (Other is sent after our own).
	again, err := parseSettings(got.append(nil)[2:])
	if err != nil || again != got {
		t.Fatalf("re-encoded: %+v, %v", again, err)
	}
}

func TestSettingsErrors(t *testing.T) {
	tests := []struct {
		name string
		p    []byte
		code ErrCode
	}{
		{"duplicate known", concat(appendSetting(nil, 0x06, 1), appendSetting(nil, 0x06, 1)), ErrCodeSettingsError},
		{"duplicate known apart", concat(appendSetting(nil, 0x01, 1), appendSetting(nil, 0x33, 1), appendSetting(nil, 0x01, 2)), ErrCodeSettingsError},
		{"duplicate unknown", concat(appendSetting(nil, 0x4000, 1), appendSetting(nil, 0x21, 1), appendSetting(nil, 0x4000, 2)), ErrCodeSettingsError},
		{"HTTP/2 ENABLE_PUSH", appendSetting(nil, 0x02, 0), ErrCodeSettingsError},
		{"HTTP/2 MAX_CONCURRENT_STREAMS", appendSetting(nil, 0x03, 100), ErrCodeSettingsError},
		{"HTTP/2 INITIAL_WINDOW_SIZE", appendSetting(nil, 0x04, 65535), ErrCodeSettingsError},
		{"HTTP/2 MAX_FRAME_SIZE", appendSetting(nil, 0x05, 16384), ErrCodeSettingsError},
		{"ENABLE_CONNECT_PROTOCOL 2", appendSetting(nil, 0x08, 2), ErrCodeSettingsError},
		{"H3_DATAGRAM 2", appendSetting(nil, 0x33, 2), ErrCodeSettingsError},
		{"truncated identifier", []byte{0x40}, ErrCodeFrameError},
		{"missing value", []byte{0x06}, ErrCodeFrameError},
		{"truncated value", []byte{0x06, 0x80, 0x00}, ErrCodeFrameError},
	}
	for _, tt := range tests {
		_, err := parseSettings(tt.p)
		if err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		wantCode(t, err, tt.code)
	}
}

func TestSettingsBooleanZero(t *testing.T) {
	p := concat(appendSetting(nil, 0x08, 0), appendSetting(nil, 0x33, 0))
	got, err := parseSettings(p)
	if err != nil || got != (settings{}) {
		t.Fatalf("parseSettings = %+v, %v", got, err)
	}
}
