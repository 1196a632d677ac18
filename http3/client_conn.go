package http3

import (
	"errors"
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
	// uniDone is closed once the server's unidirectional streams are all
	// read to their end, after the connection closed: by then a GOAWAY
	// that arrived before the close has been applied.
	uniDone chan struct{}

	uni *uniStreams

	mu           sync.Mutex
	peerSettings settings
	goingAway    bool
	goAwayID     uint64
	active       int
	// awaiting holds the request streams still waiting for their response
	// header, the ones a GOAWAY can exclude.
	awaiting map[*quic.Stream]struct{}
}

func newClientConn(t *Transport, qc *quic.Conn, authority string) (*clientConn, error) {
	cc := &clientConn{t: t, qc: qc, authority: authority, maxHeader: t.maxHeader(),
		uniDone: make(chan struct{}), awaiting: make(map[*quic.Stream]struct{})}
	cc.uni = newUniStreams(qc, true, DefaultUniStreamTimeout, cc.onControlFrame, cc.closeWithError, nil)
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
	var wg sync.WaitGroup
	defer close(cc.uniDone)
	defer wg.Wait()
	cc.uni.accept(&wg)
}

func (cc *clientConn) onControlFrame(f frame) {
	switch f := f.(type) {
	case settings:
		cc.mu.Lock()
		cc.peerSettings = f
		cc.mu.Unlock()
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
func (cc *clientConn) startRequest() bool {
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
func (cc *clientConn) addRequests(n int) {
	cc.mu.Lock()
	cc.active += n
	cc.mu.Unlock()
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

// isGoingAway reports whether the connection received GOAWAY.
func (cc *clientConn) isGoingAway() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.goingAway
}

// awaitResponse records that str waits for its response header. It
// returns false, recording nothing, when the connection received GOAWAY:
// a new request must not be sent on it.
func (cc *clientConn) awaitResponse(str *quic.Stream) bool {
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
func (cc *clientConn) responseArrived(str *quic.Stream) {
	cc.mu.Lock()
	delete(cc.awaiting, str)
	cc.mu.Unlock()
}

// excludedByGoAway reports whether the server's GOAWAY excludes the
// request stream id, which then was not processed. When the connection is
// closed it first waits until the server's control stream is read to its
// end: a GOAWAY sent just before CONNECTION_CLOSE may still be unread.
func (cc *clientConn) excludedByGoAway(id quic.StreamID) bool {
	if cc.qc.Context().Err() != nil {
		<-cc.uniDone
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.goingAway && uint64(id) >= cc.goAwayID
}
