package http3

import (
	"context"

	"github.com/turboretry/turboretry/quic"
)

// RawServerConn is the HTTP/3 state of one server connection whose
// streams the application accepts itself (quic-go's shape): it passes
// request streams to HandleRequestStream and unidirectional streams to
// HandleUnidirectionalStream, and may keep other streams for itself
// (WebTransport does). The Server's Close and Shutdown do not close it.
type RawServerConn struct {
	sc *serverConn
}

// NewRawServerConn sets up HTTP/3 on conn (its TLS configuration must have
// negotiated "h3"): our control stream with SETTINGS is opened at once.
// It fails when AdditionalSettings are invalid or the control stream
// cannot be opened.
func (s *Server) NewRawServerConn(conn *quic.Conn) (*RawServerConn, error) {
	other, err := s.additionalSettings()
	if err != nil {
		return nil, err
	}
	sc := newServerConn(s, conn, other)
	if err := sc.start(); err != nil {
		return nil, err
	}
	s.stats.connsAccepted.Add(1)
	s.stats.connsActive.Add(1)
	context.AfterFunc(conn.Context(), func() { s.stats.connsActive.Add(-1) })
	return &RawServerConn{sc: sc}, nil
}

// HandleRequestStream serves the HTTP/3 request on str, a bidirectional
// stream the client opened, and returns when its handler did.
func (c *RawServerConn) HandleRequestStream(str *quic.Stream) {
	if c.sc.admit(str) {
		c.sc.handleRequest(str)
	}
}

// HandleUnidirectionalStream runs one unidirectional stream the client
// opened (control, QPACK, or one of a type we ignore), until it ends.
func (c *RawServerConn) HandleUnidirectionalStream(str *quic.ReceiveStream) {
	c.sc.uni.serve(str)
}

// CloseWithError closes the connection with an application error code.
func (c *RawServerConn) CloseWithError(code quic.ApplicationErrorCode, msg string) error {
	c.sc.mu.Lock()
	if c.sc.idle != nil {
		c.sc.idle.Stop()
	}
	c.sc.mu.Unlock()
	return c.sc.qc.CloseWithError(code, msg)
}
