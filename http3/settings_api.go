package http3

import (
	"fmt"
	"maps"
	"slices"

	"github.com/turboretry/turboretry/internal/wire"
)

// Settings are the HTTP/3 settings a peer sent on its control stream
// (RFC 9114 section 7.2.4), in quic-go's shape.
type Settings struct {
	// EnableDatagrams: the peer supports HTTP Datagrams
	// (SETTINGS_H3_DATAGRAM, RFC 9297).
	EnableDatagrams bool
	// EnableExtendedConnect: the peer accepts extended CONNECT
	// (SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 9220).
	EnableExtendedConnect bool
	// Other holds every other setting, by identifier: those of
	// extensions, the QPACK settings when non-zero and reserved (greasing)
	// identifiers.
	Other map[uint64]uint64
}

// Settingser lets a handler wait for and read the peer's HTTP/3 settings:
// the http.ResponseWriter our Server passes to handlers implements it, as
// do ClientConn and RawClientConn.
type Settingser interface {
	// ReceivedSettings returns a channel that is closed once the peer's
	// SETTINGS frame arrived.
	ReceivedSettings() <-chan struct{}
	// Settings returns the peer's settings; valid only once the channel
	// of ReceivedSettings is closed (nil before).
	Settings() *Settings
}

// public converts the parsed SETTINGS of a peer.
func (s settings) public() *Settings {
	return &Settings{EnableDatagrams: s.H3Datagram, EnableExtendedConnect: s.EnableConnectProtocol, Other: s.otherMap()}
}

// otherMap returns the settings other than datagrams, extended CONNECT
// and the field section limit, by identifier: the QPACK ones when
// non-zero and those Other holds; nil when there are none.
func (s settings) otherMap() map[uint64]uint64 {
	var m map[uint64]uint64
	add := func(id, v uint64) {
		if m == nil {
			m = make(map[uint64]uint64)
		}
		m[id] = v
	}
	if s.QPACKMaxTableCapacity != 0 {
		add(settingQPACKMaxTableCapacity, s.QPACKMaxTableCapacity)
	}
	if s.QPACKBlockedStreams != 0 {
		add(settingQPACKBlockedStreams, s.QPACKBlockedStreams)
	}
	s.otherPairs(add)
	return m
}

// encodeAdditionalSettings checks the application's AdditionalSettings
// and encodes them for settings.Other, sorted so the frame is
// deterministic. The settings this package sends or interprets itself
// (RFC 9114, RFC 9204, RFC 9220, RFC 9297) and the HTTP/2 identifiers
// HTTP/3 forbids are refused, as is a value beyond the varint range.
func encodeAdditionalSettings(m map[uint64]uint64) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	var b []byte
	for _, id := range slices.Sorted(maps.Keys(m)) {
		v := m[id]
		switch {
		case id <= settingMaxFieldSectionSize || id == settingQPACKBlockedStreams ||
			id == settingEnableConnectProtocol || id == settingH3Datagram:
			return "", fmt.Errorf("http3: AdditionalSettings may not contain setting %#x, which HTTP/3 defines or forbids", id)
		case id > wire.MaxVarint || v > wire.MaxVarint:
			return "", fmt.Errorf("http3: AdditionalSettings: setting %#x = %d is beyond the varint range", id, v)
		}
		b = appendSetting(b, id, v)
	}
	if len(b) > maxSettingsFrameSize/2 {
		return "", fmt.Errorf("http3: AdditionalSettings take %d bytes, more than %d", len(b), maxSettingsFrameSize/2)
	}
	return string(b), nil
}
