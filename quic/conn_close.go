package quic

import (
	"errors"
	"time"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// closeState is how far the connection is in closing (RFC 9000 section
// 10). Guarded by Conn.mu.
type closeState struct {
	err      error // set once the connection is closing; never reset
	closing  bool  // we sent CONNECTION_CLOSE
	draining bool  // the peer did
	// notified: run has written our CONNECTION_CLOSE, or is about to
	// (it closes Conn.closeWritten).
	notified  bool
	packet    []byte // our CONNECTION_CLOSE, sent again when packets arrive while closing
	recvCount int    // packets received while closing: packet is resent at powers of two
	deadline  time.Time
	finished  bool // run must tear down and exit
	// refusedAtClose: a server handshake refused because its listener
	// closed; it has no closing period (closeState.period).
	refusedAtClose bool
	// masked: the peer's bare APPLICATION_ERROR from an Initial or
	// Handshake packet of the datagram being read (peerClose).
	masked *TransportError
}

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
	var ours *TransportError
	switch pub := publicError(err); {
	case errors.As(pub, &ours):
		c.closeLocal(ours)
	default:
		c.closeLocal(&TransportError{ErrorCode: InternalError, ErrorMessage: err.Error()})
	}
}

// closeLocal starts closing: it sends CONNECTION_CLOSE carrying err (an
// *ApplicationError or *TransportError) and enters the closing state.
func (c *Conn) closeLocal(err error) {
	if c.close.err != nil || c.close.finished {
		return
	}
	c.signalClosedLocked(err)
	now := time.Now()
	c.close.closing = true
	c.close.deadline = now.Add(c.close.period(c.t.singleDial, c.loss.pto()))
	if c.hs.started() {
		c.close.packet = c.buildClosePacket(err, now)
	}
	if c.close.packet == nil {
		c.close.finished = true
	} else {
		c.send.pending = append(c.send.pending, outDatagram{b: c.close.packet})
		c.admit.closed(c.server)
	}
	// The recorder sees the CONNECTION_CLOSE packet, then closes: quic-go
	// closes it before CloseWithError returns.
	c.trace.end(c.close.err)
	c.trace = nil
}

// period is how long a closing or draining connection stays to
// absorb late packets (RFC 9000 section 10.2): three PTOs, except on the
// Transport of Dial and DialAddr, which closes with its only connection and
// so would keep a goroutine reading for nothing but that (quic-go does not
// linger there either), and for a handshake refused because its listener
// closed: nothing of it will be used, and before an RTT sample three PTOs
// are three seconds that would keep ListenAddr's socket open.
// singleDial says the Transport is Dial's.
func (cs *closeState) period(singleDial bool, pto time.Duration) time.Duration {
	if singleDial || cs.refusedAtClose {
		return 0
	}
	return 3 * pto
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
		if space == spaceApp && !c.hs.complete {
			// Before completion the peer may lack 1-RTT keys; after
			// confirmation it has dropped the others.
			if c.isClient {
				continue
			}
		}
		if space != spaceApp && c.hs.confirmed {
			continue
		}
		frame := transportFrame
		if space == spaceApp {
			frame = appFrame
		}
		if pi, ok := c.buildPacket(&buf, space, maxPacketSize-len(buf), now, false, c.cids.dest, frame); ok {
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

// peerClose returns the error the peer's CONNECTION_CLOSE frame f, in
// space, closes the connection with, or nil when it is to be read past
// (masked).
func (cs *closeState) peerClose(space int, f *wire.Frame) error {
	if f.Type == wire.FrameTypeConnectionCloseApp {
		return &ApplicationError{Remote: true, ErrorCode: ApplicationErrorCode(f.ErrorCode), ErrorMessage: string(f.Reason)}
	}
	err := &TransportError{Remote: true, ErrorCode: TransportErrorCode(f.ErrorCode), FrameType: f.TriggerFrameType, ErrorMessage: string(f.Reason)}
	if space != spaceApp && err.ErrorCode == ApplicationErrorErrorCode {
		// An application close sent before the handshake was confirmed
		// stands in Initial and Handshake as a bare APPLICATION_ERROR, and
		// the same datagram usually carries the real code in 1-RTT (RFC
		// 9000 section 10.2.3): read on, and fall back to this one
		// (Conn.applyMaskedClose) only if the rest of the datagram has none.
		if cs.masked == nil {
			cs.masked = err
		}
		return nil
	}
	return err
}

// applyMaskedClose ends a datagram whose only close was a masked
// APPLICATION_ERROR (closeState.peerClose).
func (c *Conn) applyMaskedClose() {
	if c.close.masked != nil && c.close.err == nil {
		c.drainOnPeerClose(c.close.masked)
	}
	c.close.masked = nil
}

// drainOnPeerClose enters the draining state for the peer's close.
func (c *Conn) drainOnPeerClose(err error) {
	c.signalClosedLocked(err)
	c.trace.end(c.close.err)
	c.trace = nil
	c.close.draining = true
	c.close.deadline = time.Now().Add(c.close.period(c.t.singleDial, c.loss.pto()))
	c.admit.closed(c.server)
}
