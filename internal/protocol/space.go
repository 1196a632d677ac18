package protocol

// PacketNumberSpace is one of QUIC's three packet number spaces (RFC 9000
// section 12.3): each numbers and acknowledges its packets on its own, and
// 0-RTT and 1-RTT packets share SpaceAppData.
type PacketNumberSpace uint8

// The packet number spaces, in the order the handshake uses them and the
// probe timeout examines them.
const (
	SpaceInitial PacketNumberSpace = iota
	SpaceHandshake
	SpaceAppData
)

// NumSpaces is the number of packet number spaces, the length of arrays
// indexed by PacketNumberSpace.
const NumSpaces PacketNumberSpace = 3

// Valid reports whether s is one of the three spaces.
func (s PacketNumberSpace) Valid() bool { return s < NumSpaces }

// String returns the space's name: "Initial", "Handshake" or
// "ApplicationData".
func (s PacketNumberSpace) String() string {
	switch s {
	case SpaceInitial:
		return "Initial"
	case SpaceHandshake:
		return "Handshake"
	case SpaceAppData:
		return "ApplicationData"
	}
	return "invalid packet number space"
}
