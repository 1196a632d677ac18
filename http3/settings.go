package http3

import (
	"slices"

	"github.com/turboretry/turboretry/internal/wire"
)

// Setting identifiers this package interprets.
const (
	settingQPACKMaxTableCapacity = 0x01 // RFC 9204 section 5
	settingMaxFieldSectionSize   = 0x06 // RFC 9114 section 7.2.4.1
	settingQPACKBlockedStreams   = 0x07 // RFC 9204 section 5
	settingEnableConnectProtocol = 0x08 // RFC 9220 section 3
	settingH3Datagram            = 0x33 // RFC 9297 section 2.1.1
)

// settings is the content of a SETTINGS frame (RFC 9114 section 7.2.4).
// Zero values are the defaults of the RFCs, so an absent setting and a
// setting sent with its default value parse the same, except for
// SETTINGS_MAX_FIELD_SECTION_SIZE whose default is "unlimited".
type settings struct {
	QPACKMaxTableCapacity uint64
	QPACKBlockedStreams   uint64
	// MaxFieldSectionSize is meaningful only when HasMaxFieldSectionSize.
	MaxFieldSectionSize    uint64
	HasMaxFieldSectionSize bool
	EnableConnectProtocol  bool
	H3Datagram             bool
	// Other holds the settings this package does not interpret, encoded
	// as on the wire (identifier and value varints, in the order sent):
	// the extensions' settings of Settings.Other and AdditionalSettings.
	// A string keeps the struct comparable and costs no more memory than
	// the peer's frame (at most maxSettingsFrameSize).
	Other string
}

// maxSettingsFrameSize bounds the SETTINGS payload we read (quic-go's
// limit too): the unknown settings in it are kept for the connection's
// lifetime.
const maxSettingsFrameSize = 8 << 10

// payloadLen returns the length of the SETTINGS frame payload.
func (s settings) payloadLen() uint64 {
	n := 0
	pair := func(id, v uint64) { n += wire.VarintLen(id) + wire.VarintLen(v) }
	if s.QPACKMaxTableCapacity != 0 {
		pair(settingQPACKMaxTableCapacity, s.QPACKMaxTableCapacity)
	}
	if s.HasMaxFieldSectionSize {
		pair(settingMaxFieldSectionSize, s.MaxFieldSectionSize)
	}
	if s.QPACKBlockedStreams != 0 {
		pair(settingQPACKBlockedStreams, s.QPACKBlockedStreams)
	}
	if s.EnableConnectProtocol {
		pair(settingEnableConnectProtocol, 1)
	}
	if s.H3Datagram {
		pair(settingH3Datagram, 1)
	}
	return uint64(n + len(s.Other))
}

// append appends a whole SETTINGS frame. Settings at their default values
// are left out.
func (s settings) append(b []byte) []byte {
	b = appendFrameHeader(b, frameTypeSettings, s.payloadLen())
	if s.QPACKMaxTableCapacity != 0 {
		b = appendSetting(b, settingQPACKMaxTableCapacity, s.QPACKMaxTableCapacity)
	}
	if s.HasMaxFieldSectionSize {
		b = appendSetting(b, settingMaxFieldSectionSize, s.MaxFieldSectionSize)
	}
	if s.QPACKBlockedStreams != 0 {
		b = appendSetting(b, settingQPACKBlockedStreams, s.QPACKBlockedStreams)
	}
	if s.EnableConnectProtocol {
		b = appendSetting(b, settingEnableConnectProtocol, 1)
	}
	if s.H3Datagram {
		b = appendSetting(b, settingH3Datagram, 1)
	}
	return append(b, s.Other...)
}

func appendSetting(b []byte, id, v uint64) []byte {
	b = wire.AppendVarint(b, id)
	return wire.AppendVarint(b, v)
}

// known setting bits, for duplicate detection without allocating.
func knownSettingBit(id uint64) uint {
	switch id {
	case settingQPACKMaxTableCapacity:
		return 1 << 0
	case settingMaxFieldSectionSize:
		return 1 << 1
	case settingQPACKBlockedStreams:
		return 1 << 2
	case settingEnableConnectProtocol:
		return 1 << 3
	case settingH3Datagram:
		return 1 << 4
	}
	return 0
}

// parseSettings parses a SETTINGS frame payload. A repeated identifier or
// an HTTP/2 setting identifier is H3_SETTINGS_ERROR (section 7.2.4.1), as
// is a boolean setting with a value other than 0 or 1 (RFC 9220, RFC 9297);
// a payload that ends inside a pair is H3_FRAME_ERROR (section 7.1).
// Unknown identifiers, including reserved ones, are not interpreted; they
// are kept in Other.
func parseSettings(p []byte) (settings, error) {
	var s settings
	var seen uint
	var unknown []uint64 // identifiers we do not interpret, to find duplicates
	var other []byte
	for len(p) > 0 {
		pair := p
		id, n, err := wire.ParseVarint(p)
		if err != nil {
			return settings{}, newError(ErrCodeFrameError, "SETTINGS frame ends inside an identifier")
		}
		p = p[n:]
		v, n, err := wire.ParseVarint(p)
		if err != nil {
			return settings{}, newError(ErrCodeFrameError, "SETTINGS frame ends inside the value of setting %#x", id)
		}
		p = p[n:]
		if id >= 0x02 && id <= 0x05 {
			return settings{}, newError(ErrCodeSettingsError, "HTTP/2 setting %#x is not allowed in HTTP/3", id)
		}
		bit := knownSettingBit(id)
		if bit == 0 {
			unknown = append(unknown, id)
			other = append(other, pair[:len(pair)-len(p)]...)
			continue
		}
		if seen&bit != 0 {
			return settings{}, newError(ErrCodeSettingsError, "duplicate setting %#x", id)
		}
		seen |= bit
		switch id {
		case settingQPACKMaxTableCapacity:
			s.QPACKMaxTableCapacity = v
		case settingMaxFieldSectionSize:
			s.MaxFieldSectionSize, s.HasMaxFieldSectionSize = v, true
		case settingQPACKBlockedStreams:
			s.QPACKBlockedStreams = v
		case settingEnableConnectProtocol, settingH3Datagram:
			if v > 1 {
				return settings{}, newError(ErrCodeSettingsError, "setting %#x has value %d, want 0 or 1", id, v)
			}
			if id == settingEnableConnectProtocol {
				s.EnableConnectProtocol = v == 1
			} else {
				s.H3Datagram = v == 1
			}
		}
	}
	if len(unknown) > 1 {
		slices.Sort(unknown)
		for i := 1; i < len(unknown); i++ {
			if unknown[i] == unknown[i-1] {
				return settings{}, newError(ErrCodeSettingsError, "duplicate setting %#x", unknown[i])
			}
		}
	}
	s.Other = string(other)
	return s, nil
}

// otherPairs calls f with each setting of Other.
func (s settings) otherPairs(f func(id, v uint64)) {
	p := []byte(s.Other)
	for len(p) > 0 {
		id, n, err := wire.ParseVarint(p) // well formed: parseSettings or encodeAdditionalSettings made it
		if err != nil {
			return
		}
		p = p[n:]
		v, n, err := wire.ParseVarint(p)
		if err != nil {
			return
		}
		p = p[n:]
		f(id, v)
	}
}
