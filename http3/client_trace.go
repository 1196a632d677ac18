package http3

import (
	"crypto/tls"
	"net"
	"net/http/httptrace"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// The Transport reports the net/http/httptrace events that have an
// HTTP/3 meaning, at the points quic-go reports them: GetConn, DNSStart
// and DNSDone (from the resolver), ConnectStart, TLSHandshakeStart,
// TLSHandshakeDone, ConnectDone (around the QUIC dial), GotConn,
// WroteHeaderField, WroteHeaders, WroteRequest, GotFirstResponseByte,
// Got1xxResponse and Got100Continue. Wait100Continue is never reported:
// the request body is sent without waiting for 100 (Continue). The
// helpers take a nil trace.

// traceConn is the net.Conn of httptrace.GotConnInfo: a QUIC connection
// is no net.Conn, so only its addresses are available; as in quic-go,
// every other method panics.
type traceConn struct{ qc *quic.Conn }

var _ net.Conn = traceConn{}

func (c traceConn) LocalAddr() net.Addr  { return c.qc.LocalAddr() }
func (c traceConn) RemoteAddr() net.Addr { return c.qc.RemoteAddr() }

const traceConnMisuse = "http3: httptrace.GotConnInfo.Conn of an HTTP/3 connection only has addresses"

func (traceConn) Read([]byte) (int, error)         { panic(traceConnMisuse) }
func (traceConn) Write([]byte) (int, error)        { panic(traceConnMisuse) }
func (traceConn) Close() error                     { panic(traceConnMisuse) }
func (traceConn) SetDeadline(time.Time) error      { panic(traceConnMisuse) }
func (traceConn) SetReadDeadline(time.Time) error  { panic(traceConnMisuse) }
func (traceConn) SetWriteDeadline(time.Time) error { panic(traceConnMisuse) }

func traceGetConn(t *httptrace.ClientTrace, hostPort string) {
	if t != nil && t.GetConn != nil {
		t.GetConn(hostPort)
	}
}

func traceGotConn(t *httptrace.ClientTrace, qc *quic.Conn, reused bool) {
	if t != nil && t.GotConn != nil {
		t.GotConn(httptrace.GotConnInfo{Conn: traceConn{qc}, Reused: reused})
	}
}

// traceDialStart reports the start of a QUIC dial to addr.
func traceDialStart(t *httptrace.ClientTrace, addr string) {
	if t == nil {
		return
	}
	if t.ConnectStart != nil {
		t.ConnectStart("udp", addr)
	}
	if t.TLSHandshakeStart != nil {
		t.TLSHandshakeStart()
	}
}

// traceDialDone reports the end of a QUIC dial to addr.
func traceDialDone(t *httptrace.ClientTrace, addr string, qc *quic.Conn, err error) {
	if t == nil {
		return
	}
	if t.TLSHandshakeDone != nil {
		var state tls.ConnectionState
		if qc != nil {
			state = qc.ConnectionState().TLS
		}
		t.TLSHandshakeDone(state, err)
	}
	if t.ConnectDone != nil {
		t.ConnectDone("udp", addr, err)
	}
}

func traceWroteHeaders(t *httptrace.ClientTrace) {
	if t != nil && t.WroteHeaders != nil {
		t.WroteHeaders()
	}
}

func traceWroteRequest(t *httptrace.ClientTrace, err error) {
	if t != nil && t.WroteRequest != nil {
		t.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
}

func traceGotFirstResponseByte(t *httptrace.ClientTrace) {
	if t != nil && t.GotFirstResponseByte != nil {
		t.GotFirstResponseByte()
	}
}
