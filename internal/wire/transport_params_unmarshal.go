package wire

import (
	"encoding/binary"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

// Unmarshal parses the transport parameters a peer in role sender sent,
// replacing p. Absent parameters take their defaults, unknown ones
// (including the reserved 31*N+27 ids) are skipped. Every violation of
// RFC 9000 section 18.2, RFC 9221 or RFC 9368 is a TRANSPORT_PARAMETER_ERROR
// whose reason names the parameter. Byte fields are copied, so p does not
// keep b alive. Duplicates are detected for the parameters this package
// knows; repeated unknown parameters are not tracked.
func (p *TransportParameters) Unmarshal(b []byte, sender protocol.Perspective) error {
	*p = DefaultTransportParameters()
	if sender != protocol.PerspectiveClient && sender != protocol.PerspectiveServer {
		return qerr.NewTransportParameterError("invalid sender role")
	}
	var seen uint64 // bit i: parameter id i (every known id is below 64)
	for len(b) > 0 {
		id, n, err := ParseVarint(b)
		if err != nil {
			return qerr.NewTransportParameterError("truncated parameter id")
		}
		b = b[n:]
		l, n, err := ParseVarint(b)
		if err != nil {
			return qerr.NewTransportParameterError("truncated length of parameter 0x" + hexID(id))
		}
		b = b[n:]
		if l > uint64(len(b)) {
			return qerr.NewTransportParameterError("parameter 0x" + hexID(id) + " longer than the extension")
		}
		val := b[:l]
		b = b[l:]
		name, known := tpNames[id]
		if !known {
			continue
		}
		bit := uint64(1) << id
		if seen&bit != 0 {
			return qerr.NewTransportParameterError("duplicate " + name)
		}
		seen |= bit
		if sender == protocol.PerspectiveClient && isServerOnly(id) {
			return errServerOnly(id)
		}
		if err := p.parseParam(id, val); err != nil {
			return err
		}
	}
	return p.validate(sender)
}

// parseParam decodes one known parameter value into p. Range checks are
// left to validate, shared with Marshal.
func (p *TransportParameters) parseParam(id uint64, val []byte) error {
	switch id {
	case tpOriginalDestinationConnectionID:
		p.OriginalDestinationConnectionID, p.HasOriginalDestinationConnectionID = cloneBytes(val), true
	case tpInitialSourceConnectionID:
		p.InitialSourceConnectionID, p.HasInitialSourceConnectionID = cloneBytes(val), true
	case tpRetrySourceConnectionID:
		p.RetrySourceConnectionID, p.HasRetrySourceConnectionID = cloneBytes(val), true
	case tpStatelessResetToken:
		if len(val) != 16 {
			return errTPValue(id, "not 16 bytes")
		}
		copy(p.StatelessResetToken[:], val)
		p.HasStatelessResetToken = true
	case tpDisableActiveMigration:
		if len(val) != 0 {
			return errTPValue(id, "not empty")
		}
		p.DisableActiveMigration = true
	case tpResetStreamAt:
		if len(val) != 0 {
			return errTPValue(id, "not empty")
		}
		p.ResetStreamAt = true
	case tpPreferredAddress:
		pa, err := parsePreferredAddress(val)
		if err != nil {
			return err
		}
		p.PreferredAddress = pa
	case tpVersionInformation:
		if len(val) < 4 || len(val)%4 != 0 {
			return errTPValue(id, "length not a positive multiple of 4")
		}
		vi := &VersionInformation{ChosenVersion: Version(binary.BigEndian.Uint32(val))}
		for v := val[4:]; len(v) > 0; v = v[4:] {
			vi.AvailableVersions = append(vi.AvailableVersions, Version(binary.BigEndian.Uint32(v)))
		}
		p.VersionInformation = vi
	default:
		v, n, err := ParseVarint(val)
		if err != nil || n != len(val) {
			return errTPValue(id, "malformed")
		}
		return p.setVarintParam(id, v)
	}
	return nil
}

// maxDurationMs is the largest millisecond count a time.Duration holds.
const maxDurationMs = math.MaxInt64 / int64(time.Millisecond)

func (p *TransportParameters) setVarintParam(id, v uint64) error {
	switch id {
	case tpMaxIdleTimeout:
		p.MaxIdleTimeout = time.Duration(min(v, uint64(maxDurationMs))) * time.Millisecond
	case tpMaxUDPPayloadSize:
		p.MaxUDPPayloadSize = v
	case tpInitialMaxData:
		p.InitialMaxData = v
	case tpInitialMaxStreamDataBidiLocal:
		p.InitialMaxStreamDataBidiLocal = v
	case tpInitialMaxStreamDataBidiRemote:
		p.InitialMaxStreamDataBidiRemote = v
	case tpInitialMaxStreamDataUni:
		p.InitialMaxStreamDataUni = v
	case tpInitialMaxStreamsBidi:
		p.InitialMaxStreamsBidi = v
	case tpInitialMaxStreamsUni:
		p.InitialMaxStreamsUni = v
	case tpAckDelayExponent:
		if v > maxAckDelayExponent {
			return errTPValue(id, "above 20")
		}
		p.AckDelayExponent = uint8(v)
	case tpMaxAckDelay:
		if v > maxMaxAckDelayMs {
			return errTPValue(id, "not below 2^14 ms")
		}
		p.MaxAckDelay = time.Duration(v) * time.Millisecond
	case tpActiveConnectionIDLimit:
		p.ActiveConnectionIDLimit = v
	case tpMaxDatagramFrameSize:
		p.MaxDatagramFrameSize = v
	}
	return nil
}

// parsePreferredAddress decodes the preferred_address value: IPv4 address
// and port, IPv6 address and port, a length-prefixed connection ID and a
// stateless reset token.
func parsePreferredAddress(val []byte) (*PreferredAddress, error) {
	const fixed = 4 + 2 + 16 + 2 + 1
	if len(val) < fixed {
		return nil, errTPValue(tpPreferredAddress, "truncated")
	}
	cidLen := int(val[fixed-1])
	switch {
	case cidLen == 0:
		return nil, errTPValue(tpPreferredAddress, "with zero-length connection ID")
	case cidLen > MaxConnIDLen:
		return nil, errTPValue(tpPreferredAddress, "connection ID longer than 20 bytes")
	case len(val) != fixed+cidLen+16:
		return nil, errTPValue(tpPreferredAddress, "length does not match its connection ID")
	}
	pa := &PreferredAddress{
		IPv4:         netip.AddrPortFrom(netip.AddrFrom4([4]byte(val[0:4])), binary.BigEndian.Uint16(val[4:6])),
		IPv6:         netip.AddrPortFrom(netip.AddrFrom16([16]byte(val[6:22])), binary.BigEndian.Uint16(val[22:24])),
		ConnectionID: cloneBytes(val[fixed : fixed+cidLen]),
	}
	copy(pa.StatelessResetToken[:], val[fixed+cidLen:])
	return pa, nil
}

// cloneBytes copies b, returning nil for an empty b so that a value and its
// re-parsed copy compare equal.
func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }

func hexID(v uint64) string { return strconv.FormatUint(v, 16) }
