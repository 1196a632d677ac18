package http3

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/turboretry/turboretry/quic"
)

// errConnGoingAway is returned for a request that was not sent because
// its connection received GOAWAY; the Transport retries it elsewhere.
var errConnGoingAway = errors.New("http3: connection is going away")

// clientConn is the HTTP/3 state of one client connection.
type clientConn struct {
	t         *Transport
	qc        *quic.Conn
	authority string
	maxHeader uint64

	mu           sync.Mutex
	uni          uniStreamSet
	peerSettings settings
	goingAway    bool
	goAwayID     uint64
	active       int
}

func newClientConn(t *Transport, qc *quic.Conn, authority string) (*clientConn, error) {
	cc := &clientConn{t: t, qc: qc, authority: authority, maxHeader: t.maxHeader(), uni: uniStreamSet{isClient: true}}
	ctrl, err := qc.OpenUniStream()
	if err != nil {
		cc.close(ErrCodeInternalError, "")
		return nil, err
	}
	ours := settings{MaxFieldSectionSize: cc.maxHeader, HasMaxFieldSectionSize: true}
	if _, err := ctrl.Write(ours.append(appendStreamType(nil, streamTypeControl))); err != nil {
		cc.close(ErrCodeClosedCriticalStream, "")
		return nil, err
	}
	go cc.acceptUniStreams()
	go func() {
		<-qc.Context().Done()
		t.forget(cc)
	}()
	return cc, nil
}

func (cc *clientConn) close(code ErrCode, msg string) {
	_ = cc.qc.CloseWithError(quic.ApplicationErrorCode(code), msg)
}

func (cc *clientConn) closeWithError(err error) {
	cc.t.logger().Debug("http3: closing connection", "remote", cc.qc.RemoteAddr(), "err", err)
	cc.close(errorCode(err), err.Error())
}

func (cc *clientConn) idle() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.active == 0
}

func (cc *clientConn) acceptUniStreams() {
	for {
		rs, err := cc.qc.AcceptUniStream(context.Background())
		if err != nil {
			return
		}
		go cc.handleUniStream(rs)
	}
}

// handleUniStream dispatches one of the server's unidirectional streams
// (RFC 9114 section 6.2).
func (cc *clientConn) handleUniStream(rs *quic.ReceiveStream) {
	br := bufio.NewReader(rs)
	t, err := readStreamType(br)
	if err != nil {
		return
	}
	cc.mu.Lock()
	ignore, err := cc.uni.accept(t)
	cc.mu.Unlock()
	switch {
	case err != nil:
		cc.closeWithError(err)
	case ignore:
		rs.CancelRead(quic.StreamErrorCode(ErrCodeStreamCreationError))
	case t == streamTypePush:
		// Section 4.6: we never sent MAX_PUSH_ID, so no push is allowed.
		cc.closeWithError(newError(ErrCodeIDError, "push stream without MAX_PUSH_ID"))
	case t == streamTypeControl:
		if err := serveControlStream(br, true, cc.onControlFrame); err != nil {
			cc.closeWithError(err)
		}
	default: // QPACK streams: nothing to act on with no dynamic table
		if _, err := io.Copy(io.Discard, br); err == nil || isStreamReset(err) {
			cc.close(ErrCodeClosedCriticalStream, t.String()+" stream closed")
		}
	}
}

func (cc *clientConn) onControlFrame(f frame) {
	switch f := f.(type) {
	case settings:
		cc.mu.Lock()
		cc.peerSettings = f
		cc.mu.Unlock()
	case goAwayFrame:
		cc.mu.Lock()
		cc.goingAway, cc.goAwayID = true, f.ID
		idle := cc.active == 0
		cc.mu.Unlock()
		cc.t.forget(cc)
		if idle {
			cc.close(ErrCodeNoError, "")
		}
	}
}

// startRequest counts a request, unless the connection is going away.
func (cc *clientConn) startRequest() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.goingAway {
		return false
	}
	cc.active++
	return true
}

func (cc *clientConn) requestDone() {
	cc.mu.Lock()
	cc.active--
	last := cc.goingAway && cc.active == 0
	cc.mu.Unlock()
	if last {
		cc.close(ErrCodeNoError, "")
	}
}

func (cc *clientConn) peerFieldLimit() uint64 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.peerSettings.fieldSectionLimit()
}

// rejectedByGoAway reports whether the server's GOAWAY excludes stream id.
func (cc *clientConn) rejectedByGoAway(id uint64) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.goingAway && id >= cc.goAwayID
}
