package quic

import (
	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/protocol"
)

// maybeSendStatelessReset answers a short-header packet for an unknown
// connection ID with a stateless reset when a StatelessResetKey is set.
func (t *Transport) maybeSendStatelessReset(p *receivedPacket) {
	if t.StatelessResetKey == nil || t.cidLen == 0 {
		return
	}
	// Always shorter than its trigger, so two endpoints cannot loop.
	size, ok := connid.StatelessResetSize(len(p.data))
	if !ok {
		return
	}
	token := statelessResetToken(t.StatelessResetKey, p.data[1:1+t.cidLen])
	out := getBuffer()
	defer putBuffer(out)
	b, err := connid.AppendStatelessReset((*out)[:0], token, size)
	if err != nil {
		return
	}
	t.replyTo(p, b)
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
