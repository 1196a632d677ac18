package wire

import (
	"encoding/binary"
)

// ParseVersionNegotiation parses a Version Negotiation packet (RFC 9000
// section 17.2.1) and appends the listed versions to versions, which the
// caller may reuse. Connection IDs may be up to 255 bytes (RFC 8999).
func ParseVersionNegotiation(b []byte, versions []Version) (dcid, scid []byte, vs []Version, err error) {
	var h InvariantHeader
	if err := ParseInvariantHeader(b, &h); err != nil {
		return nil, nil, versions, err
	}
	if h.Version != versionNegotiation {
		return nil, nil, versions, ErrNotVersionNegotiate
	}
	list := b[h.HeaderLen:]
	if len(list) == 0 || len(list)%4 != 0 {
		return nil, nil, versions, ErrBadVersionList
	}
	for ; len(list) > 0; list = list[4:] {
		versions = append(versions, Version(binary.BigEndian.Uint32(list)))
	}
	return h.DestConnID, h.SrcConnID, versions, nil
}

// AppendVersionNegotiationHeader appends the header of a Version
// Negotiation packet (RFC 9000 section 17.2.1: the client's connection IDs
// swapped) without the version list, which the caller appends (4 bytes
// each, big-endian).
// The low six bits of unused fill the first byte's unused bits.
func AppendVersionNegotiationHeader(b []byte, unused byte, clientDCID, clientSCID []byte) []byte {
	if len(clientDCID) > 255 || len(clientSCID) > 255 {
		panic("wire: connection ID longer than 255 bytes")
	}
	b = append(b, 0xc0|unused&0x3f)
	b = binary.BigEndian.AppendUint32(b, uint32(versionNegotiation))
	b = append(b, byte(len(clientSCID)))
	b = append(b, clientSCID...)
	b = append(b, byte(len(clientDCID)))
	return append(b, clientDCID...)
}
