package http3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/turboretry/turboretry/quic"
)

// errConnGoingAway is returned for a request that was not sent because
// its connection received GOAWAY; the Transport retries it elsewhere.
var errConnGoingAway = errors.New("http3: connection is going away")

// connUnusableError is the error of a request that was not sent because
// its connection closed before a stream could be opened; the Transport
// retries it elsewhere.
type connUnusableError struct{ err error }

func (e *connUnusableError) Error() string { return "http3: connection unusable: " + e.err.Error() }
func (e *connUnusableError) Unwrap() error { return e.err }

// ClientConn is an HTTP/3 client connection to one server, in quic-go's
// shape: the Transport keeps one per authority, and Transport.NewClientConn
// makes one on a QUIC connection the application dialed, for extended
// CONNECT (WebTransport, MASQUE) and other uses of RequestStream. It is
// an http.RoundTripper for requests to that server.
type ClientConn struct {
	t         *Transport
	qc        *quic.Conn
	authority string // the pool's key; empty for NewClientConn
	maxHeader uint64
	noGzip    bool // Transport.DisableCompression
	// uniDone is closed once the server's unidirectional streams are all
	// read to their end, after the connection closed: by then a GOAWAY
	// that arrived before the close has been applied. Nil for a
	// RawClientConn, whose streams the application runs.
	uniDone chan struct{}

	uni  *uniStreams
	peer *peerState
	qlog *qlogProducer // nil without a qlog trace

	mu        sync.Mutex
	goingAway bool
	goAwayID  uint64
	active    int
	// awaiting holds the request streams still waiting for their response
	// header, the ones a GOAWAY can exclude.
	awaiting map[*quic.Stream]struct{}
}

var _ http.RoundTripper = (*ClientConn)(nil)

// newClientConn sets up HTTP/3 on qc: our control stream with SETTINGS
// (other is the encoded AdditionalSettings), and, unless raw, the loop
// that runs the server's unidirectional streams. A pooled connection
// (authority set) leaves the pool when it closes. On an error the
// connection is closed; the ClientConn returned with it fails every
// request.
func newClientConn(t *Transport, qc *quic.Conn, authority, other string, raw bool) (*ClientConn, error) {
	cc := &ClientConn{t: t, qc: qc, authority: authority, maxHeader: t.maxHeader(),
		noGzip: t.DisableCompression, awaiting: make(map[*quic.Stream]struct{})}
	if !raw {
		cc.uniDone = make(chan struct{})
	}
	datagrams := localDatagrams(qc, t.EnableDatagrams)
	if t.EnableDatagrams && !datagrams {
		t.logger().Warn("http3: EnableDatagrams is set but the QUIC connection has no datagram support (quic.Config.EnableDatagrams); HTTP datagrams stay off")
	}
	cc.peer = newPeerState(qc, datagrams, cc.closeWithError)
	cc.uni = newUniStreams(qc, true, DefaultUniStreamTimeout, cc.onControlFrame, cc.closeWithError, nil)
	cc.qlog = newQlogProducer(qc)
	cc.peer.qlog, cc.uni.qlog = cc.qlog, cc.qlog
	ctrl, err := qc.OpenUniStream()
	if err != nil {
		cc.close(ErrCodeInternalError, "")
		return cc, fromQUICError(err)
	}
	ours := settings{MaxFieldSectionSize: cc.maxHeader, HasMaxFieldSectionSize: true, H3Datagram: datagrams, Other: other}
	if _, err := ctrl.Write(ours.append(appendStreamType(nil, streamTypeControl))); err != nil {
		cc.close(ErrCodeClosedCriticalStream, "")
		return cc, fromQUICError(err)
	}
	cc.qlog.controlStreamOpened(ctrl.StreamID(), ours)
	if !raw {
		go cc.acceptUniStreams()
	}
	if authority != "" {
		context.AfterFunc(qc.Context(), func() { t.forget(cc) })
	}
	return cc, nil
}

// NewClientConn runs HTTP/3 on a QUIC connection the application dialed
// (its TLS configuration must have negotiated "h3"), with the Transport's
// settings (EnableDatagrams, AdditionalSettings, MaxResponseHeaderBytes,
// DisableCompression, Logger), as quic-go. The connection is not pooled:
// the Transport's Close and CloseIdleConnections leave it alone. When our
// control stream cannot be set up the connection is closed, and requests
// on it fail. Invalid AdditionalSettings are logged and left out.
func (t *Transport) NewClientConn(conn *quic.Conn) *ClientConn {
	return t.newUnpooledConn(conn, false)
}

// NewRawClientConn is NewClientConn for an application that runs the
// connection's stream accept loops itself: it passes the server's
// unidirectional streams to HandleUnidirectionalStream and any
// bidirectional ones to HandleBidirectionalStream (what WebTransport
// does to see its own stream types).
func (t *Transport) NewRawClientConn(conn *quic.Conn) *RawClientConn {
	return &RawClientConn{ClientConn: t.newUnpooledConn(conn, true)}
}

func (t *Transport) newUnpooledConn(conn *quic.Conn, raw bool) *ClientConn {
	other, err := encodeAdditionalSettings(t.AdditionalSettings)
	if err != nil {
		t.logger().Error("http3: AdditionalSettings not sent", "err", err)
		other = ""
	}
	cc, err := newClientConn(t, conn, "", other, raw)
	if err != nil {
		t.logger().Debug("http3: setting up the client connection failed", "err", err)
	}
	return cc
}

// RawClientConn is a ClientConn whose stream accept loops the
// application runs (quic-go's shape).
type RawClientConn struct {
	*ClientConn
}

// HandleUnidirectionalStream runs one unidirectional stream the server
// opened (control, QPACK, or one of a type we ignore). It returns when
// the stream is done; call it in its own goroutine.
func (c *RawClientConn) HandleUnidirectionalStream(str *quic.ReceiveStream) {
	c.uni.serve(str)
}

// HandleBidirectionalStream handles a bidirectional stream the server
// opened: RFC 9114 section 6.1 allows none without an extension, so the
// connection is closed with H3_STREAM_CREATION_ERROR.
func (cc *ClientConn) HandleBidirectionalStream(str *quic.Stream) {
	cc.close(ErrCodeStreamCreationError, fmt.Sprintf("server opened bidirectional stream %d", str.StreamID()))
}

// ReceivedSettings returns a channel that is closed once the server's
// SETTINGS arrived (Settingser).
func (cc *ClientConn) ReceivedSettings() <-chan struct{} { return cc.peer.ReceivedSettings() }

// Settings returns the server's settings, once ReceivedSettings is
// closed (Settingser).
func (cc *ClientConn) Settings() *Settings { return cc.peer.Settings() }

// CloseWithError closes the connection with an application error code.
// Its qlog trace, QUIC and HTTP/3 events, has ended when it returns (so
// it must not be called from the trace's own recorder).
func (cc *ClientConn) CloseWithError(code quic.ApplicationErrorCode, msg string) error {
	err := cc.qc.CloseWithError(code, msg)
	cc.qlog.endConnAndWait()
	return err
}

// Context returns a context that ends when the connection closes.
func (cc *ClientConn) Context() context.Context { return cc.qc.Context() }

// LocalAddr returns the connection's local address.
func (cc *ClientConn) LocalAddr() net.Addr { return cc.qc.LocalAddr() }

// RemoteAddr returns the connection's remote address.
func (cc *ClientConn) RemoteAddr() net.Addr { return cc.qc.RemoteAddr() }

// RoundTrip sends req on this connection and returns the response once
// its header arrived, as Transport.RoundTrip does but without pooling,
// retries or coalescing. The request body is closed, also on errors.
func (cc *ClientConn) RoundTrip(req *http.Request) (*http.Response, error) {
	if !cc.startRequest() {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errConnGoingAway
	}
	rsp, err := cc.roundTrip(req)
	if err != nil && req.Body != nil {
		req.Body.Close()
	}
	return rsp, err
}

func (cc *ClientConn) close(code ErrCode, msg string) {
	_ = cc.qc.CloseWithError(quic.ApplicationErrorCode(code), msg)
}

func (cc *ClientConn) closeWithError(err error) {
	cc.t.logger().Debug("http3: closing connection", "remote", cc.qc.RemoteAddr(), "err", err)
	cc.close(errorCode(err), err.Error())
}

func (cc *ClientConn) idle() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.active == 0
}

func (cc *ClientConn) acceptUniStreams() {
	var wg sync.WaitGroup
	defer close(cc.uniDone)
	defer wg.Wait()
	cc.uni.accept(&wg)
}

func (cc *ClientConn) onControlFrame(f frame) {
	switch f := f.(type) {
	case settings:
		cc.peer.onSettings(f)
	case goAwayFrame:
		// RFC 9114 section 5.2: requests at or above the ID will not be
		// processed. Cancel those still waiting for a response, so they
		// are retried on a new connection now rather than when this one
		// closes; those below it complete here.
		cc.mu.Lock()
		cc.goingAway, cc.goAwayID = true, f.ID
		var excluded []*quic.Stream
		for str := range cc.awaiting {
			if uint64(str.StreamID()) >= f.ID {
				excluded = append(excluded, str)
			}
		}
		idle := cc.active == 0
		cc.mu.Unlock()
		for _, str := range excluded {
			resetStream(str, ErrCodeRequestCanceled)
		}
		cc.t.forget(cc)
		if idle {
			cc.close(ErrCodeNoError, "")
		}
	}
}

// startRequest counts a request, unless the connection is going away.
func (cc *ClientConn) startRequest() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.goingAway {
		return false
	}
	cc.active++
	return true
}

// addRequests counts the n requests that waited for this connection's
// dial; each ends with requestDone.
func (cc *ClientConn) addRequests(n int) {
	cc.mu.Lock()
	cc.active += n
	cc.mu.Unlock()
}

func (cc *ClientConn) requestDone() {
	cc.mu.Lock()
	cc.active--
	last := cc.goingAway && cc.active == 0
	cc.mu.Unlock()
	if last {
		cc.close(ErrCodeNoError, "")
	}
}

// isGoingAway reports whether the connection received GOAWAY.
func (cc *ClientConn) isGoingAway() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.goingAway
}

// awaitResponse records that str waits for its response header. It
// returns false, recording nothing, when the connection received GOAWAY:
// a new request must not be sent on it.
func (cc *ClientConn) awaitResponse(str *quic.Stream) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.goingAway {
		return false
	}
	cc.awaiting[str] = struct{}{}
	return true
}

// responseArrived ends what awaitResponse started: from here on the
// server processed the request, whatever GOAWAY says.
func (cc *ClientConn) responseArrived(str *quic.Stream) {
	cc.mu.Lock()
	delete(cc.awaiting, str)
	cc.mu.Unlock()
}

// excludedByGoAway reports whether the server's GOAWAY excludes the
// request stream id, which then was not processed. When the connection is
// closed it first waits until the server's control stream is read to its
// end: a GOAWAY sent just before CONNECTION_CLOSE may still be unread.
func (cc *ClientConn) excludedByGoAway(id quic.StreamID) bool {
	if cc.qc.Context().Err() != nil && cc.uniDone != nil {
		<-cc.uniDone
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.goingAway && uint64(id) >= cc.goAwayID
}
