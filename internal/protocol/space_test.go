package protocol

import "testing"

func TestPacketNumberSpace(t *testing.T) {
	for s, want := range map[PacketNumberSpace]string{SpaceInitial: "Initial", SpaceHandshake: "Handshake", SpaceAppData: "ApplicationData", NumSpaces: "invalid packet number space"} {
		if s.String() != want {
			t.Errorf("space %d: String() = %q, want %q", s, s.String(), want)
		}
		if s.Valid() != (s < NumSpaces) {
			t.Errorf("space %d: Valid() = %v", s, s.Valid())
		}
	}
}
