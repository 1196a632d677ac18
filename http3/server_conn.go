package http3

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/quic"
)

// serverConn is the HTTP/3 state of one QUIC connection on the server.
type serverConn struct {
	s         *Server
	qc        *quic.Conn
	log       *slog.Logger
	maxHeader uint64
	ctx       context.Context // base context of requests

	ctrlMu     sync.Mutex
	ctrl       *quic.SendStream
	goAwaySent bool // GOAWAY written on ctrl

	uni     *uniStreams
	peer    *peerState
	headers *byteBudget // MaxConnHeaderBytes
	other   string      // AdditionalSettings, encoded
	// qlog records the connection's HTTP/3 events, held open by the
	// requests in progress; ctrlQlog, a producer of its own (as in
	// quic-go, so traces count the same producers), records our control
	// stream: its SETTINGS and GOAWAY. Nil without a qlog trace.
	qlog, ctrlQlog *qlogProducer
	// onAcceptable is acceptWaiting, for NotifyAcceptable (serveOnDemand).
	onAcceptable func()
	// priorityAware: the client sent a Priority field (applyPriority).
	priorityAware atomic.Bool

	mu           sync.Mutex
	nextStreamID uint64 // one past the last request stream accepted
	goingAway    bool
	goAwayID     uint64
	active       int
	idle         *time.Timer // Server.IdleTimeout, while no request is active
	requests     sync.WaitGroup
}

// newServerConn sets up the HTTP/3 state of qc; other is the encoded
// AdditionalSettings, already checked.
func newServerConn(s *Server, qc *quic.Conn, other string) *serverConn {
	sc := &serverConn{s: s, qc: qc, log: s.logger(), maxHeader: s.maxHeaderBytes(), other: other}
	sc.headers = newByteBudget(s.maxConnHeaderBytes(), &s.stats.headerBytes)
	sc.peer = newPeerState(qc, localDatagrams(qc, s.EnableDatagrams), sc.closeWithError)
	sc.uni = newUniStreams(qc, false, s.uniStreamTimeout(), sc.onControlFrame, sc.closeWithError, s.stats.refuse)
	sc.qlog, sc.ctrlQlog = newQlogProducer(qc), newQlogProducer(qc)
	sc.peer.qlog, sc.uni.qlog = sc.qlog, sc.qlog
	sc.uni.typeRead = s.testHookStreamType
	ctx := context.WithValue(qc.Context(), ServerContextKey, s)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, qc.LocalAddr())
	sc.ctx = context.WithValue(ctx, RemoteAddrContextKey, qc.RemoteAddr())
	if s.ConnContext != nil {
		if sc.ctx = s.ConnContext(sc.ctx, qc); sc.ctx == nil {
			panic("http3: ConnContext returned nil") // as net/http
		}
	}
	return sc
}

// start opens our control stream with our SETTINGS and starts the
// idle timer.
func (sc *serverConn) start() error {
	ctrl, err := sc.qc.OpenUniStream()
	if err != nil {
		sc.close(ErrCodeInternalError, "cannot open the control stream")
		return fmt.Errorf("http3: opening the control stream: %w", fromQUICError(err))
	}
	ours := sc.s.settings(sc.peer.datagrams, sc.other)
	b := appendStreamType(nil, streamTypeControl)
	if _, err := ctrl.Write(ours.append(b)); err != nil {
		sc.close(ErrCodeClosedCriticalStream, "cannot write the control stream")
		return fmt.Errorf("http3: writing the control stream: %w", fromQUICError(err))
	}
	sc.ctrlQlog.controlStreamOpened(ctrl.StreamID(), ours)
	sc.ctrlMu.Lock()
	sc.ctrl = ctrl
	sc.ctrlMu.Unlock()
	if sc.s.shuttingDown() {
		// Taken after Shutdown began (its handshake ended after it), or
		// reached by Shutdown before it had a control stream: it goes
		// away now, its requests refused with H3_REQUEST_REJECTED, which
		// clients retry on a new connection.
		sc.goAway()
	}
	if d := sc.s.IdleTimeout; d > 0 {
		sc.mu.Lock()
		sc.idle = time.AfterFunc(d, sc.closeIfIdle)
		sc.mu.Unlock()
	}
	return nil
}

// serve runs the connection: our control stream, the peer's
// unidirectional streams and one goroutine per request stream (tracked
// by sc.requests). It returns once the connection is closed, with the
// reason.
func (sc *serverConn) serve() error {
	defer sc.s.connDone(sc)
	if err := sc.start(); err != nil {
		return err
	}
	// One goroutine accepts both kinds of streams: an idle connection
	// then holds one goroutine (and its stack) less.
	for {
		str, rs, err := sc.qc.AcceptAnyStream(context.Background())
		if rs != nil {
			go sc.uni.serve(rs)
			continue
		}
		if err != nil {
			sc.stopIdleTimer()
			return fmt.Errorf("http3: accepting stream failed: %w", fromQUICError(err))
		}
		if sc.admit(str) {
			sc.requests.Go(func() { sc.handleRequest(str) })
		}
	}
}

// serveOnDemand runs the connection like serve, without a goroutine of
// its own: the streams the peer opens are taken as NotifyAcceptable
// reports them, and the connection's end, through its context, does what
// serve does when it returns. An idle connection then holds no HTTP/3
// goroutine at all.
func (sc *serverConn) serveOnDemand() {
	if err := sc.start(); err != nil {
		sc.s.connDone(sc)
		return
	}
	context.AfterFunc(sc.qc.Context(), func() {
		sc.stopIdleTimer()
		sc.s.connDone(sc)
	})
	sc.onAcceptable = sc.acceptWaiting // bound once: no allocation per wakeup
	sc.acceptWaiting()
}

// acceptWaiting takes the peer streams that wait to be accepted and starts
// serving each, then asks to be called again when the next one comes. It
// runs on the connection's goroutine (NotifyAcceptable) and so must not
// block: request handlers and unidirectional streams get goroutines.
func (sc *serverConn) acceptWaiting() {
	for {
		str, rs, err := sc.qc.AcceptAnyStream(acceptNowContext)
		switch {
		case rs != nil:
			go sc.uni.serve(rs)
		case str != nil:
			if sc.admit(str) {
				sc.requests.Go(func() { sc.handleRequest(str) })
			}
		case errors.Is(err, context.Canceled) && sc.qc.Context().Err() == nil:
			// None waits: on to the next.
			sc.qc.NotifyAcceptable(sc.onAcceptable)
			return
		default:
			return // the connection ended; AfterFunc in serveOnDemand handles it
		}
	}
}

// acceptNowContext is canceled: AcceptAnyStream with it returns a stream
// that waits, or at once.
var acceptNowContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func (sc *serverConn) stopIdleTimer() {
	sc.mu.Lock()
	if sc.idle != nil {
		sc.idle.Stop()
	}
	sc.mu.Unlock()
}

// admit counts a new request stream as active, or refuses it with
// H3_REQUEST_REJECTED when it is at or above our GOAWAY. An admitted
// stream ends with requestDone (handleRequest calls it).
func (sc *serverConn) admit(str *quic.Stream) bool {
	// With quic.Config.RequireStreamCreditRelease the client gets the
	// stream's credit back once the stream is done: HTTP/3 handles
	// every request stream, refused ones included.
	str.ReleaseStreamCredit()
	id := uint64(str.StreamID())
	sc.mu.Lock()
	if sc.goingAway && id >= sc.goAwayID {
		sc.mu.Unlock()
		sc.s.stats.refuse(RefusedGoingAway)
		resetStream(str, ErrCodeRequestRejected) // section 5.2: not processed, safe to retry
		return false
	}
	sc.active++
	sc.qlog.hold()
	if sc.idle != nil {
		sc.idle.Stop()
	}
	sc.s.stats.requests.Add(1)
	sc.s.stats.requestsActive.Add(1)
	if id+4 > sc.nextStreamID {
		sc.nextStreamID = id + 4
	}
	sc.mu.Unlock()
	return true
}

func (sc *serverConn) requestDone() {
	sc.s.stats.requestsActive.Add(-1)
	sc.mu.Lock()
	sc.active--
	if sc.active == 0 && sc.idle != nil {
		sc.idle.Reset(sc.s.IdleTimeout)
	}
	last := sc.goingAway && sc.active == 0
	sc.mu.Unlock()
	sc.qlog.release()
	if last {
		go sc.drain()
	}
}

// closeIfIdle closes a connection that had no request for
// Server.IdleTimeout (a timer that fired while a request started finds
// it active).
func (sc *serverConn) closeIfIdle() {
	sc.mu.Lock()
	idle := sc.active == 0
	sc.mu.Unlock()
	if idle {
		sc.close(ErrCodeNoError, "idle timeout")
	}
}

// drainTimeout is how long a connection that went away and has no request
// left may be quiet (no packet either way) before the server closes it.
const drainTimeout = 2 * time.Second

// drain closes a connection that went away and has no requests left. The
// client closes it itself once it has read the responses; closing at once
// could discard response data still in flight (CONNECTION_CLOSE abandons
// unsent stream data), and a handler's end is not the end of its response
// for a client that reads slowly. So we wait while packets still flow
// either way, and close once the connection was quiet for drainTimeout
// (Shutdown's context bounds the whole wait).
func (sc *serverConn) drain() {
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	last := sc.packets()
	for {
		select {
		case <-sc.qc.Context().Done():
			return
		case <-t.C:
		}
		now := sc.packets()
		if now == last {
			break
		}
		last = now
		t.Reset(drainTimeout)
	}
	sc.close(ErrCodeNoError, "")
}

// packets counts the connection's packets, both ways.
func (sc *serverConn) packets() uint64 {
	st := sc.qc.ConnectionStats()
	return st.PacketsSent + st.PacketsReceived
}

// goAway starts a graceful close: GOAWAY names the first request stream
// we will not process; the connection closes when the last request before
// it ends. Called again once the control stream exists, it sends the
// GOAWAY a first call could not.
func (sc *serverConn) goAway() {
	sc.mu.Lock()
	first := !sc.goingAway
	if first {
		sc.goingAway = true
		sc.goAwayID = sc.nextStreamID
	}
	id, idle := sc.goAwayID, sc.active == 0
	sc.mu.Unlock()
	sc.ctrlMu.Lock()
	if sc.ctrl != nil && !sc.goAwaySent {
		sc.goAwaySent = true
		_, _ = sc.ctrl.Write(goAwayFrame{ID: id}.append(nil))
		sc.ctrlQlog.frameCreated(sc.ctrl.StreamID(), frameTypeGoAway, uint64(wire.VarintLen(id)), qlog.GoAwayFrame{StreamID: quic.StreamID(id)})
	}
	sc.ctrlMu.Unlock()
	if first && idle {
		go sc.drain()
	}
}

// close closes the QUIC connection with an HTTP/3 error code.
func (sc *serverConn) close(code ErrCode, msg string) {
	_ = sc.qc.CloseWithError(quic.ApplicationErrorCode(code), msg)
}

// closeWithError closes the connection for a protocol violation.
func (sc *serverConn) closeWithError(err error) {
	if !errors.Is(err, errSettingsTimeout) {
		sc.s.stats.refuse(RefusedConnectionError)
	}
	sc.log.Debug("http3: closing connection", "remote", sc.qc.RemoteAddr(), "err", err)
	sc.close(errorCode(err), err.Error())
}

func (sc *serverConn) onControlFrame(f frame) {
	if s, ok := f.(settings); ok {
		sc.peer.onSettings(s)
	}
}
