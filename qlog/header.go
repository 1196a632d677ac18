package qlog

import (
	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic/quictype"
)

// A Token is a token carried by an Initial or Retry packet or a NEW_TOKEN
// frame.
type Token struct {
	Raw []byte
}

func (t Token) encode(enc *jsontext.Encoder) error {
	e := &encoder{enc: enc}
	e.begin()
	e.name("raw")
	e.begin()
	e.hex("data", t.Raw)
	e.end()
	e.end()
	return e.err
}

// A PacketHeader is a QUIC packet header. Connection IDs are logged only if
// valid, the packet number only for packet types that have one, the key
// phase bit only for 1-RTT packets.
type PacketHeader struct {
	PacketType       PacketType
	KeyPhaseBit      KeyPhaseBit
	PacketNumber     PacketNumber
	Version          Version
	SrcConnectionID  ConnectionID
	DestConnectionID ConnectionID
	Token            *Token
}

func (h PacketHeader) encode(enc *jsontext.Encoder) error {
	e := &encoder{enc: enc}
	e.begin()
	pt := h.PacketType
	if pt == "" {
		pt = PacketTypeUnknown
	}
	e.str("packet_type", string(pt))
	switch pt {
	case PacketTypeInitial, PacketTypeHandshake, PacketType0RTT, PacketType1RTT:
		if h.PacketNumber != quictype.InvalidPacketNumber {
			e.int("packet_number", int64(h.PacketNumber))
		}
	}
	if h.Version != 0 {
		e.str("version", versionHex(h.Version))
	}
	if pt != PacketType1RTT && h.SrcConnectionID.Valid() {
		e.hex("scid", h.SrcConnectionID.Bytes())
	}
	if h.DestConnectionID.Valid() {
		e.hex("dcid", h.DestConnectionID.Bytes())
	}
	if h.KeyPhaseBit != quictype.KeyPhaseUndefined {
		e.bool("key_phase_bit", h.KeyPhaseBit == quictype.KeyPhaseOne)
	}
	if h.Token != nil {
		e.name("token")
		e.value(h.Token.encode)
	}
	e.end()
	return e.err
}

// A PacketHeaderVersionNegotiation is the header of a Version Negotiation
// packet, whose connection IDs may have any length.
type PacketHeaderVersionNegotiation struct {
	SrcConnectionID  ArbitraryLenConnectionID
	DestConnectionID ArbitraryLenConnectionID
}

func (h PacketHeaderVersionNegotiation) encode(enc *jsontext.Encoder) error {
	e := &encoder{enc: enc}
	e.begin()
	e.str("packet_type", string(PacketTypeVersionNegotiation))
	e.int("scil", int64(h.SrcConnectionID.Len()))
	e.str("scid", h.SrcConnectionID.String())
	e.int("dcil", int64(h.DestConnectionID.Len()))
	e.str("dcid", h.DestConnectionID.String())
	e.end()
	return e.err
}
