package quic

import (
	"net"
	"testing"
	"testing/synctest"

	"github.com/turboretry/turboretry/internal/wire"
)

// Frame-level tests of path validation and migration (RFC 9000 sections
// 8.2 and 9): the test, as the client, sends from another address.

var testNewPeerAddr = &net.UDPAddr{IP: net.IPv4(10, 0, 0, 3), Port: 5555}

// sameAddr reports whether a and b are the same UDP address.
func sameAddr(a, b net.Addr) bool { return a.String() == b.String() }

// TestPathProbeAnsweredOnItsPath: a PATH_CHALLENGE from a new address is
// answered there, in a datagram of at least 1200 bytes (RFC 9000
// sections 8.2.2 and 8.2.1).
func TestPathProbeAnsweredOnItsPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		data := [8]byte{7, 7, 7}
		tc.writeFramesFrom(testNewPeerAddr, wire.Frame{Type: wire.FrameTypePathChallenge, PathData: data})
		f := tc.findFrame("PATH_CHALLENGE from a new address", wire.FrameTypePathResponse)
		if f.PathData != data || !sameAddr(f.to, testNewPeerAddr) || f.size < 1200 {
			t.Fatalf("PATH_RESPONSE %x to %v in %d bytes; want %x to %v in at least 1200", f.PathData, f.to, f.size, data, testNewPeerAddr)
		}
	})
}

// TestPathProbeDoesNotMigrate: a packet of probing frames only from a new
// address does not move the connection: its data still goes to the old
// address (RFC 9000 section 9.2).
func TestPathProbeDoesNotMigrate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFramesFrom(testNewPeerAddr, wire.Frame{Type: wire.FrameTypePathChallenge})
		tc.readFrames()
		mustWrite(t, tc.openUniStream(), 10)
		if f := tc.findFrame("data after a probe", wire.FrameTypeStream); !sameAddr(f.to, tc.peer) {
			t.Fatalf("data went to %v, want the old address %v", f.to, tc.peer)
		}
	})
}

// writeFramesFrom sends frames in a 1-RTT packet from addr, padded to
// 1200 bytes as a peer pads its path probes (RFC 9000 section 8.2.1).
func (tc *testConn) writeFramesFrom(addr net.Addr, frames ...wire.Frame) {
	tc.t.Helper()
	var payload []byte
	for i := range frames {
		payload = wire.AppendFrame(payload, &frames[i])
	}
	payload = append(payload, make([]byte, 1100)...)
	tc.writeDatagramFrom(tc.sealPacket(nil, spaceApp, tc.nextPN[spaceApp], payload), addr)
	tc.nextPN[spaceApp]++
}

// TestPathMigrationValidatesNewAddress: a non-probing packet from a new
// address makes the server validate it with PATH_CHALLENGE there (RFC
// 9000 sections 9.3 and 8.2.1).
func TestPathMigrationValidatesNewAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFramesFrom(testNewPeerAddr, wire.Frame{Type: wire.FrameTypePing})
		f := tc.findFrame("a PING from a new address", wire.FrameTypePathChallenge)
		if !sameAddr(f.to, testNewPeerAddr) || f.size < 1200 {
			t.Fatalf("PATH_CHALLENGE to %v in %d bytes, want to %v in at least 1200", f.to, f.size, testNewPeerAddr)
		}
	})
}

// TestPathMigrationCompletes: once the new address answered the
// challenge, the connection sends there (RFC 9000 section 9.3).
func TestPathMigrationCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		tc.writeFramesFrom(testNewPeerAddr, wire.Frame{Type: wire.FrameTypePing})
		ch := tc.findFrame("a PING from a new address", wire.FrameTypePathChallenge)
		tc.readFrames()
		tc.writeFramesFrom(testNewPeerAddr, wire.Frame{Type: wire.FrameTypePathResponse, PathData: ch.PathData})
		mustWrite(t, tc.openUniStream(), 10)
		if f := tc.findFrame("data after the validation", wire.FrameTypeStream); !sameAddr(f.to, testNewPeerAddr) {
			t.Fatalf("data went to %v, want the new address %v", f.to, testNewPeerAddr)
		}
	})
}

// TestPathResponseWithinAmplificationLimit: to an address not validated
// yet, the answer to a small probe stays within three times its size,
// unpadded (RFC 9000 sections 8.2.2 and 9.3.1).
func TestPathResponseWithinAmplificationLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestConn(t, serverSide)
		probe := tc.sealPacket(nil, spaceApp, tc.nextPN[spaceApp], wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameTypePathChallenge}))
		tc.nextPN[spaceApp]++
		tc.writeDatagramFrom(probe, testNewPeerAddr)
		f := tc.findFrame("a small PATH_CHALLENGE from a new address", wire.FrameTypePathResponse)
		if !sameAddr(f.to, testNewPeerAddr) || f.size > 3*len(probe) {
			t.Fatalf("PATH_RESPONSE to %v in %d bytes, want to %v in at most %d", f.to, f.size, testNewPeerAddr, 3*len(probe))
		}
	})
}
