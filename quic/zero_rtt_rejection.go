package quic

import (
	"context"
	"errors"
)

// Err0RTTRejected is returned, as in quic-go, by the streams a client
// opened in 0-RTT and by OpenStream, AcceptStream and their variants once
// the server rejected the early data, until NextConnection.
var Err0RTTRejected = errors.New("quic: 0-RTT rejected")

// on0RTTRejected follows the server's rejection of our early data (RFC
// 9001 section 4.6.2): nothing sent in 0-RTT counts, so the streams opened
// in it fail with Err0RTTRejected and are forgotten, stream IDs and flow
// control start over, and the 0-RTT packets still in flight are emptied so
// that their loss resends nothing (their stream IDs are used again).
func (c *Conn) on0RTTRejected() {
	if !c.early.sent {
		return
	}
	for _, s := range c.streams.all {
		s.sendErr, s.recvErr = Err0RTTRejected, Err0RTTRejected
		s.send.Reset()
		c.budget.charge(s)
		c.recvMem.release(s)
		s.removed = true
		s.endSend(Err0RTTRejected)
		s.signalRead()
		s.signalWrite()
	}
	clear(c.streams.all)
	c.streams.sendList, c.streams.ctrlList = c.streams.sendList[:0], c.streams.ctrlList[:0]
	c.streams.acceptBidi, c.streams.acceptUni = nil, nil
	for _, p := range c.loss.sent.all() {
		if p.space == spaceApp {
			p.frames = p.frames[:0]
		}
	}
	c.datagrams.out = nil
	broadcast(&c.datagrams.sendSig)
	c.streams.counts.Init(c.streams.persp, uint64(c.config.MaxIncomingStreams), uint64(c.config.MaxIncomingUniStreams))
	c.flow.send.Init(0)
	c.early.sent = false
	if p := c.hs.peerParams; p != nil && p != c.early.remembered {
		// The server's parameters arrived before the rejection.
		c.flow.send.Init(p.InitialMaxData)
		_ = c.streams.counts.SetPeerLimits(p.InitialMaxStreamsBidi, p.InitialMaxStreamsUni)
	} else {
		c.hs.peerParams = nil
		c.datagrams.peerSupports, c.datagrams.peerMax = false, 0
	}
	c.early.awaitingNext = true
	broadcast(&c.streams.sig)
}

// NextConnection makes a client connection whose 0-RTT data the server
// rejected usable again, as in quic-go: it waits for the handshake to
// complete and returns the connection, on which new streams can be opened
// (the ones opened in 0-RTT stay failed with Err0RTTRejected). Without a
// rejection it returns the connection once the handshake completed.
func (c *Conn) NextConnection(ctx context.Context) (*Conn, error) {
	select {
	case <-c.handshakeDoneCh:
	case <-c.closedCh:
		c.mu.Lock()
		defer c.mu.Unlock()
		return nil, c.close.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	c.early.awaitingNext = false
	c.mu.Unlock()
	return c, nil
}
