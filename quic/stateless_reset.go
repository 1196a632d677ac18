package quic

import (
	"crypto/rand"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/protocol"
)

const (
	// minStatelessResetLen is the shortest datagram that can be a stateless
	// reset: 5 bytes that look like a short header, then the 16-byte token
	// (RFC 9000 section 10.3).
	minStatelessResetLen = 21
	// maxStatelessResetLen keeps resets small; a reset is always shorter
	// than the packet that triggered it, so two endpoints cannot loop.
	maxStatelessResetLen = 43
)

// maybeSendStatelessReset answers a short-header packet for an unknown
// connection ID with a stateless reset when a StatelessResetKey is set.
func (t *Transport) maybeSendStatelessReset(p receivedPacket) {
	if t.StatelessResetKey == nil || len(p.data) <= minStatelessResetLen || t.cidLen == 0 {
		return
	}
	token := statelessResetToken(t.StatelessResetKey, p.data[1:1+t.cidLen])
	n := min(len(p.data)-1, maxStatelessResetLen)
	b := make([]byte, n)
	_, _ = rand.Read(b[:n-16])
	b[0] = b[0]&^0x80 | 0x40 // short header form, fixed bit set
	copy(b[n-16:], token[:])
	t.write(b, p.remote)
}

// statelessResetToken derives the token of a connection ID from the key,
// as connid.LocalCIDs does for the IDs it issues.
func statelessResetToken(key *StatelessResetKey, cid []byte) [16]byte {
	id, err := protocol.ParseConnectionID(cid)
	if err != nil {
		return [16]byte{}
	}
	return connid.ResetTokenFor(*key, id)
}
