package http3

import (
	"bufio"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// uniStreams runs the peer's unidirectional streams of one connection,
// on either side (RFC 9114 section 6.2, RFC 9204 section 4.2).
type uniStreams struct {
	qc       *quic.Conn
	isClient bool
	// timeout bounds the wait for a stream's type and, on the control
	// stream, for its SETTINGS; 0 means none.
	timeout time.Duration
	// onControlFrame receives every valid frame of the control stream.
	onControlFrame func(frame)
	// fail closes the connection with the H3 error of err.
	fail func(err error)
	// refuse counts a refusal (nil: not counted).
	refuse func(Refusal)
	// qlog records the streams' types and the control stream's frames.
	qlog *qlogProducer
	// typeRead, when not nil, is told each stream's type once read (a
	// test hook).
	typeRead func(*quic.Conn, StreamType)

	mu  sync.Mutex
	set uniStreamSet
}

func newUniStreams(qc *quic.Conn, isClient bool, timeout time.Duration, onControlFrame func(frame), fail func(error), refuse func(Refusal)) *uniStreams {
	return &uniStreams{qc: qc, isClient: isClient, timeout: timeout, onControlFrame: onControlFrame,
		fail: fail, refuse: refuse, set: uniStreamSet{isClient: isClient}}
}

// uniStreamReadBuffer sizes the reader of a peer's unidirectional stream.
// The control stream lives as long as the connection and carries a few
// small frames (SETTINGS, then perhaps GOAWAY); the QPACK streams carry
// nothing while our dynamic table has no capacity. bufio's default 4 KiB
// would be most of what an idle connection holds in HTTP/3 state, and
// larger reads (a big SETTINGS payload) bypass the buffer anyway.
const uniStreamReadBuffer = 64

// errSettingsTimeout is the cause of the H3_MISSING_SETTINGS sent when a
// control stream does not deliver SETTINGS in time.
var errSettingsTimeout = errors.New("http3: no SETTINGS frame within the timeout")

func (u *uniStreams) count(r Refusal) {
	if u.refuse != nil {
		u.refuse(r)
	}
}

// accept runs streams until the connection ends. wg, when not nil,
// tracks the stream goroutines.
func (u *uniStreams) accept(wg *sync.WaitGroup) {
	for {
		rs, err := u.qc.AcceptUniStream(u.qc.Context())
		if err != nil {
			return
		}
		if wg != nil {
			wg.Go(func() { u.serve(rs) })
		} else {
			go u.serve(rs)
		}
	}
}

// serve reads the type of one stream and handles it.
func (u *uniStreams) serve(rs *quic.ReceiveStream) {
	// With quic.Config.RequireStreamCreditRelease the peer gets this
	// stream's credit back once the stream is done: HTTP/3 is what
	// handles it.
	rs.ReleaseStreamCredit()
	if u.timeout > 0 {
		_ = rs.SetReadDeadline(time.Now().Add(u.timeout))
	}
	br := bufio.NewReaderSize(rs, uniStreamReadBuffer)
	t, err := readStreamType(br)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			u.count(RefusedUniStreamTimeout)
			rs.CancelRead(quic.StreamErrorCode(ErrCodeStreamCreationError))
		}
		return // a stream that ends before its type carries nothing
	}
	u.qlog.streamTypeSet(rs.StreamID(), t)
	if u.typeRead != nil {
		u.typeRead(u.qc, t)
	}
	u.mu.Lock()
	ignore, err := u.set.accept(t)
	u.mu.Unlock()
	switch {
	case err != nil:
		u.fail(err)
		return
	case ignore:
		u.count(RefusedUniStreamIgnored)
		rs.CancelRead(quic.StreamErrorCode(ErrCodeStreamCreationError))
		return
	case t == streamTypeControl:
		cr := newControlStreamReader(br, u.isClient, u.qlog, rs.StreamID(), func(f frame) {
			if _, ok := f.(settings); ok && u.timeout > 0 {
				_ = rs.SetReadDeadline(time.Time{})
			}
			u.onControlFrame(f)
		})
		if !u.isClient {
			u.readControl(rs, br, cr)
			return
		}
		u.endControl(cr.run())
		return
	case t == streamTypePush:
		// Only a client gets here (accept refuses a client's push
		// stream). We never send MAX_PUSH_ID, so no push is allowed
		// (section 4.6).
		err = newError(ErrCodeIDError, "push stream without MAX_PUSH_ID")
	default:
		if u.timeout > 0 {
			_ = rs.SetReadDeadline(time.Time{})
		}
		if t == streamTypeQPACKEncoder {
			err = readEncoderStream(br)
		} else {
			err = readDecoderStream(br)
		}
	}
	if err != nil {
		u.fail(err)
	}
}

// readControl reads the frames of the peer's control stream that are
// there; once SETTINGS is in and nothing more is, it stops, and
// NotifyReadable starts it again on a new goroutine when the peer sends
// more. The control stream lives as long as the connection and is quiet
// after SETTINGS, so an idle server connection holds no goroutine for it.
// The client keeps reading on one goroutine (its Close waits for it).
func (u *uniStreams) readControl(rs *quic.ReceiveStream, br *bufio.Reader, cr *controlStreamReader) {
	for {
		if done, err := cr.step(); done {
			u.endControl(err)
			return
		}
		if cr.check.gotSettings && br.Buffered() == 0 {
			rs.NotifyReadable(func() { go u.readControl(rs, br, cr) })
			return
		}
	}
}

// endControl handles the end of reading the control stream with the error
// that must close the connection, if any.
func (u *uniStreams) endControl(err error) {
	if errors.Is(err, errSettingsTimeout) {
		u.count(RefusedSettingsTimeout)
	}
	if err != nil {
		u.fail(err)
	}
}
