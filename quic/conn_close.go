package quic

import (
	"errors"
	"time"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// flowError passes a flowcontrol transport error on and turns any other
// error into an internal one.
func flowError(err error) error {
	var te *qerr.TransportError
	if errors.As(err, &te) {
		return te
	}
	return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
}

// closeWithError closes the connection because of a local error: a peer's
// protocol violation (a *qerr.TransportError) or an internal failure.
func (c *Conn) closeWithError(err error) {
	var te *qerr.TransportError
	var ours *TransportError
	switch {
	case errors.As(err, &te):
		c.closeLocal(&TransportError{ErrorCode: TransportErrorCode(te.Code), FrameType: te.FrameType, ErrorMessage: te.Reason})
	case errors.As(err, &ours):
		c.closeLocal(ours)
	default:
		c.closeLocal(&TransportError{ErrorCode: InternalError, ErrorMessage: err.Error()})
	}
}

// closeLocal starts closing: it sends CONNECTION_CLOSE carrying err (an
// *ApplicationError or *TransportError) and enters the closing state.
func (c *Conn) closeLocal(err error) {
	if c.closeErr != nil || c.finished {
		return
	}
	c.signalClosedLocked(err)
	now := time.Now()
	c.closing = true
	c.closeDeadline = now.Add(c.closingPeriod())
	if c.tls == nil {
		c.finished = true
		return
	}
	c.closePacket = c.buildClosePacket(err, now)
	if c.closePacket == nil {
		c.finished = true
		return
	}
	c.pendingWrites = append(c.pendingWrites, outDatagram{b: c.closePacket})
}

// closingPeriod is how long a closing or draining connection stays to
// absorb late packets (RFC 9000 section 10.2): three PTOs, except on the
// Transport of Dial and DialAddr, which closes with its only connection and
// so would keep a goroutine reading for nothing but that (quic-go does not
// linger there either).
func (c *Conn) closingPeriod() time.Duration {
	if c.t.singleDial {
		return 0
	}
	return 3 * c.ptoLocked()
}

// buildClosePacket builds a datagram with CONNECTION_CLOSE in every space we
// can send in that the peer may be reading (RFC 9000 section 10.2.3).
func (c *Conn) buildClosePacket(err error, now time.Time) []byte {
	var appFrame, transportFrame []byte
	switch e := err.(type) {
	case *ApplicationError:
		appFrame = wire.AppendConnectionCloseFrame(nil, true, uint64(e.ErrorCode), 0, truncReason(e.ErrorMessage))
		// Before the handshake completes the peer may not read 1-RTT:
		// there the application error becomes APPLICATION_ERROR, without
		// the reason (RFC 9000 section 10.2.3).
		transportFrame = wire.AppendConnectionCloseFrame(nil, false, uint64(ApplicationErrorErrorCode), 0, nil)
	case *TransportError:
		transportFrame = wire.AppendConnectionCloseFrame(nil, false, uint64(e.ErrorCode), e.FrameType, truncReason(e.ErrorMessage))
		appFrame = transportFrame
	default:
		return nil
	}
	buf := make([]byte, 0, maxPacketSize+tagLen)
	var pkts [3]packetInfo
	n := 0
	for space := spaceInitial; space <= spaceApp; space++ {
		if !c.canSealIn(space) {
			continue
		}
		if space == spaceApp && !c.handshakeComplete {
			// Before completion the peer may lack 1-RTT keys; after
			// confirmation it has dropped the others.
			if c.isClient {
				continue
			}
		}
		if space != spaceApp && c.handshakeConfirmed {
			continue
		}
		frame := transportFrame
		if space == spaceApp {
			frame = appFrame
		}
		if pi, ok := c.buildPacket(&buf, space, maxPacketSize-len(buf), now, false, c.destCID, frame); ok {
			pkts[n] = pi
			n++
		}
	}
	if n == 0 {
		return nil
	}
	d := c.finishDatagram(buf, pkts[:n], maxPacketSize, now)
	return d // not pooled: it is sent again while closing
}

func truncReason(s string) []byte {
	if len(s) > 256 {
		s = s[:256]
	}
	return []byte(s)
}
