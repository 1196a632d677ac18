package wire

import (
	"encoding/binary"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

// Marshal appends the transport parameters as sender sends them in the
// quic_transport_parameters TLS extension. Parameters equal to their
// default are left out. Values the peer would reject and server-only
// parameters in a client's set return a TRANSPORT_PARAMETER_ERROR naming
// the parameter, and b unchanged.
func (p *TransportParameters) Marshal(b []byte, sender protocol.Perspective) ([]byte, error) {
	if err := p.validate(sender); err != nil {
		return b, err
	}
	if p.HasOriginalDestinationConnectionID {
		b = appendTPBytes(b, tpOriginalDestinationConnectionID, p.OriginalDestinationConnectionID)
	}
	if p.MaxIdleTimeout != 0 {
		b = appendTPVarint(b, tpMaxIdleTimeout, uint64(p.MaxIdleTimeout/time.Millisecond))
	}
	if p.HasStatelessResetToken {
		b = appendTPBytes(b, tpStatelessResetToken, p.StatelessResetToken[:])
	}
	if p.MaxUDPPayloadSize != DefaultMaxUDPPayloadSize {
		b = appendTPVarint(b, tpMaxUDPPayloadSize, p.MaxUDPPayloadSize)
	}
	for _, v := range [...]struct {
		id  uint64
		val uint64
	}{
		{tpInitialMaxData, p.InitialMaxData},
		{tpInitialMaxStreamDataBidiLocal, p.InitialMaxStreamDataBidiLocal},
		{tpInitialMaxStreamDataBidiRemote, p.InitialMaxStreamDataBidiRemote},
		{tpInitialMaxStreamDataUni, p.InitialMaxStreamDataUni},
		{tpInitialMaxStreamsBidi, p.InitialMaxStreamsBidi},
		{tpInitialMaxStreamsUni, p.InitialMaxStreamsUni},
	} {
		if v.val != 0 {
			b = appendTPVarint(b, v.id, v.val)
		}
	}
	if p.AckDelayExponent != DefaultAckDelayExponent {
		b = appendTPVarint(b, tpAckDelayExponent, uint64(p.AckDelayExponent))
	}
	if p.MaxAckDelay != DefaultMaxAckDelay {
		b = appendTPVarint(b, tpMaxAckDelay, uint64(p.MaxAckDelay/time.Millisecond))
	}
	if p.DisableActiveMigration {
		b = appendTPBytes(b, tpDisableActiveMigration, nil)
	}
	if pa := p.PreferredAddress; pa != nil {
		b = AppendVarint(b, tpPreferredAddress)
		b = AppendVarint(b, uint64(4+2+16+2+1+len(pa.ConnectionID)+16))
		var ip4 [4]byte
		if pa.IPv4.Addr().IsValid() {
			ip4 = pa.IPv4.Addr().As4()
		}
		b = append(b, ip4[:]...)
		b = binary.BigEndian.AppendUint16(b, pa.IPv4.Port())
		var ip6 [16]byte
		if pa.IPv6.Addr().IsValid() {
			ip6 = pa.IPv6.Addr().As16()
		}
		b = append(b, ip6[:]...)
		b = binary.BigEndian.AppendUint16(b, pa.IPv6.Port())
		b = append(b, byte(len(pa.ConnectionID)))
		b = append(b, pa.ConnectionID...)
		b = append(b, pa.StatelessResetToken[:]...)
	}
	if p.ActiveConnectionIDLimit != DefaultActiveConnectionIDLimit {
		b = appendTPVarint(b, tpActiveConnectionIDLimit, p.ActiveConnectionIDLimit)
	}
	if p.HasInitialSourceConnectionID {
		b = appendTPBytes(b, tpInitialSourceConnectionID, p.InitialSourceConnectionID)
	}
	if p.HasRetrySourceConnectionID {
		b = appendTPBytes(b, tpRetrySourceConnectionID, p.RetrySourceConnectionID)
	}
	if vi := p.VersionInformation; vi != nil {
		b = AppendVarint(b, tpVersionInformation)
		b = AppendVarint(b, uint64(4+4*len(vi.AvailableVersions)))
		b = binary.BigEndian.AppendUint32(b, uint32(vi.ChosenVersion))
		for _, v := range vi.AvailableVersions {
			b = binary.BigEndian.AppendUint32(b, uint32(v))
		}
	}
	if p.MaxDatagramFrameSize != 0 {
		b = appendTPVarint(b, tpMaxDatagramFrameSize, p.MaxDatagramFrameSize)
	}
	if p.ResetStreamAt {
		b = appendTPBytes(b, tpResetStreamAt, nil)
	}
	return b, nil
}

func appendTPVarint(b []byte, id, v uint64) []byte {
	b = AppendVarint(b, id)
	b = AppendVarint(b, uint64(VarintLen(v)))
	return AppendVarint(b, v)
}

func appendTPBytes(b []byte, id uint64, v []byte) []byte {
	b = AppendVarint(b, id)
	b = AppendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// validate checks the rules RFC 9000 section 18.2, RFC 9221 and RFC 9368
// put on parameter values, for parameters sent by sender.
func (p *TransportParameters) validate(sender protocol.Perspective) error {
	if sender != protocol.PerspectiveClient && sender != protocol.PerspectiveServer {
		return qerr.NewTransportParameterError("invalid sender role")
	}
	if sender == protocol.PerspectiveClient {
		switch {
		case p.HasOriginalDestinationConnectionID:
			return errServerOnly(tpOriginalDestinationConnectionID)
		case p.HasStatelessResetToken:
			return errServerOnly(tpStatelessResetToken)
		case p.PreferredAddress != nil:
			return errServerOnly(tpPreferredAddress)
		case p.HasRetrySourceConnectionID:
			return errServerOnly(tpRetrySourceConnectionID)
		}
	}
	for _, c := range [...]struct {
		id  uint64
		cid []byte
	}{
		{tpOriginalDestinationConnectionID, p.OriginalDestinationConnectionID},
		{tpInitialSourceConnectionID, p.InitialSourceConnectionID},
		{tpRetrySourceConnectionID, p.RetrySourceConnectionID},
	} {
		if len(c.cid) > MaxConnIDLen {
			return errTPValue(c.id, "longer than 20 bytes")
		}
	}
	switch {
	case p.MaxIdleTimeout < 0:
		return errTPValue(tpMaxIdleTimeout, "negative")
	case p.MaxUDPPayloadSize < minMaxUDPPayloadSize:
		return errTPValue(tpMaxUDPPayloadSize, "below 1200")
	case p.MaxUDPPayloadSize > MaxVarint:
		return errTPValue(tpMaxUDPPayloadSize, "above 2^62-1")
	case p.InitialMaxData > MaxVarint:
		return errTPValue(tpInitialMaxData, "above 2^62-1")
	case p.InitialMaxStreamDataBidiLocal > MaxVarint:
		return errTPValue(tpInitialMaxStreamDataBidiLocal, "above 2^62-1")
	case p.InitialMaxStreamDataBidiRemote > MaxVarint:
		return errTPValue(tpInitialMaxStreamDataBidiRemote, "above 2^62-1")
	case p.InitialMaxStreamDataUni > MaxVarint:
		return errTPValue(tpInitialMaxStreamDataUni, "above 2^62-1")
	case p.InitialMaxStreamsBidi > MaxStreamCount:
		return errTPValue(tpInitialMaxStreamsBidi, "above 2^60")
	case p.InitialMaxStreamsUni > MaxStreamCount:
		return errTPValue(tpInitialMaxStreamsUni, "above 2^60")
	case p.AckDelayExponent > maxAckDelayExponent:
		return errTPValue(tpAckDelayExponent, "above 20")
	case p.MaxAckDelay < 0 || p.MaxAckDelay/time.Millisecond > maxMaxAckDelayMs:
		return errTPValue(tpMaxAckDelay, "not below 2^14 ms")
	case p.ActiveConnectionIDLimit < minActiveConnectionIDLimit:
		return errTPValue(tpActiveConnectionIDLimit, "below 2")
	case p.ActiveConnectionIDLimit > MaxVarint:
		return errTPValue(tpActiveConnectionIDLimit, "above 2^62-1")
	case p.MaxDatagramFrameSize > MaxVarint:
		return errTPValue(tpMaxDatagramFrameSize, "above 2^62-1")
	}
	if pa := p.PreferredAddress; pa != nil {
		switch {
		case len(pa.ConnectionID) == 0:
			return errTPValue(tpPreferredAddress, "with zero-length connection ID")
		case len(pa.ConnectionID) > MaxConnIDLen:
			return errTPValue(tpPreferredAddress, "connection ID longer than 20 bytes")
		case pa.IPv4.Addr().IsValid() && !pa.IPv4.Addr().Is4():
			return errTPValue(tpPreferredAddress, "IPv4 address is not IPv4")
		case pa.IPv6.Addr().IsValid() && !pa.IPv6.Addr().Is6():
			return errTPValue(tpPreferredAddress, "IPv6 address is not IPv6")
		}
	}
	if vi := p.VersionInformation; vi != nil {
		if vi.ChosenVersion == 0 {
			return errTPValue(tpVersionInformation, "chosen version 0")
		}
		for _, v := range vi.AvailableVersions {
			if v == 0 {
				return errTPValue(tpVersionInformation, "available version 0")
			}
		}
	}
	return nil
}

func errServerOnly(id uint64) error {
	return qerr.NewTransportParameterError(tpNames[id] + " sent by a client")
}

func errTPValue(id uint64, what string) error {
	return qerr.NewTransportParameterError(tpNames[id] + " " + what)
}
