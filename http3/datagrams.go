package http3

import (
	"context"
	"errors"
	"sync"

	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/quic"
)

// HTTP Datagrams (RFC 9297 section 2.1): the payload of a QUIC DATAGRAM
// frame is a Quarter Stream ID varint, the ID of the client-initiated
// bidirectional request stream divided by four, and the HTTP Datagram
// Payload.

// maxQuarterStreamID is the largest Quarter Stream ID (section 2.1): a
// larger one is H3_DATAGRAM_ERROR.
const maxQuarterStreamID = 1<<60 - 1

// streamDatagramQueue bounds the datagrams held for one stream that its
// reader has not taken; newer ones are dropped (datagrams are
// unreliable). With the QUIC receive queue in front (32 per connection)
// a connection holds at most MaxIncomingStreams x 32 datagrams.
const streamDatagramQueue = 32

// errDatagramsDisabled is returned by SendDatagram and ReceiveDatagram when
// HTTP Datagrams were not enabled on this side or not negotiated.
var errDatagramsDisabled = errors.New("http3: HTTP datagrams are not enabled on this connection")

// streamDatagrams is the datagram state of one request stream.
type streamDatagrams struct {
	mu      sync.Mutex
	queue   [][]byte
	ready   chan struct{} // 1-buffered: a datagram arrived or the stream ended
	recvErr error         // the receive side ended: no more datagrams
}

func newStreamDatagrams() *streamDatagrams {
	return &streamDatagrams{ready: make(chan struct{}, 1)}
}

func (d *streamDatagrams) signal() {
	select {
	case d.ready <- struct{}{}:
	default:
	}
}

// enqueue queues a received payload; it reports false when it was
// dropped.
func (d *streamDatagrams) enqueue(b []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.recvErr != nil || len(d.queue) >= streamDatagramQueue {
		return false
	}
	d.queue = append(d.queue, b)
	d.signal()
	return true
}

// endReceive records that the stream's receive side ended with err: a
// waiting ReceiveDatagram returns it once the queue is empty (RFC 9297
// section 2.1: datagrams are tied to the stream's lifetime).
func (d *streamDatagrams) endReceive(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.recvErr == nil {
		d.recvErr = err
		d.signal()
	}
}

// receive returns the next queued datagram, waiting for one.
func (d *streamDatagrams) receive(ctx context.Context) ([]byte, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	for {
		d.mu.Lock()
		if len(d.queue) > 0 {
			b := d.queue[0]
			d.queue[0] = nil
			d.queue = d.queue[1:]
			d.mu.Unlock()
			return b, nil
		}
		err := d.recvErr
		d.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-d.ready:
		}
	}
}

// streamDatagramsMap finds the datagram state of a request stream by ID.
type streamDatagramsMap struct {
	mu sync.Mutex
	m  map[quic.StreamID]*streamDatagrams
}

func (m *streamDatagramsMap) add(id quic.StreamID) *streamDatagrams {
	d := newStreamDatagrams()
	m.mu.Lock()
	if m.m == nil {
		m.m = make(map[quic.StreamID]*streamDatagrams)
	}
	m.m[id] = d
	m.mu.Unlock()
	return d
}

func (m *streamDatagramsMap) remove(id quic.StreamID) {
	m.mu.Lock()
	delete(m.m, id)
	m.mu.Unlock()
}

func (m *streamDatagramsMap) get(id quic.StreamID) *streamDatagrams {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[id]
}

// trackDatagrams registers a request stream for HTTP Datagrams when we
// enabled them; nil otherwise. The caller removes it with untrack.
func (p *peerState) trackDatagrams(str *quic.Stream) *streamDatagrams {
	if !p.datagrams {
		return nil
	}
	return p.streams.add(str.StreamID())
}

func (p *peerState) untrackDatagrams(str *quic.Stream, d *streamDatagrams) {
	if d != nil {
		p.streams.remove(str.StreamID())
		d.endReceive(errStreamDone)
	}
}

// errStreamDone ends the datagrams of a stream whose request is over.
var errStreamDone = errors.New("http3: the request stream is done")

// receiveDatagrams hands the HTTP Datagrams of the connection to their
// streams until the connection closes. Datagrams for a stream that is
// not (or no longer) open are dropped (section 2.1 allows dropping those
// that arrive before their stream).
func (p *peerState) receiveDatagrams() {
	ctx := p.qc.Context()
	for {
		b, err := p.qc.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		q, n, err := wire.ParseVarint(b)
		if err != nil {
			p.fail(newError(ErrCodeDatagramError, "HTTP datagram too short for its Quarter Stream ID"))
			return
		}
		if q > maxQuarterStreamID {
			p.fail(newError(ErrCodeDatagramError, "HTTP datagram with Quarter Stream ID %d", q))
			return
		}
		p.qlog.datagram(false, quic.StreamID(q*4), len(b))
		if d := p.streams.get(quic.StreamID(q * 4)); d != nil {
			d.enqueue(b[n:])
		}
	}
}

// datagramBufSize is above the largest DATAGRAM payload a packet carries.
const datagramBufSize = 1500

// datagramBufPool holds the buffers that prefix a payload with its
// Quarter Stream ID; the QUIC layer copies what it sends.
var datagramBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, datagramBufSize)
	return &b
}}

// sendDatagram sends b as an HTTP Datagram of request stream str.
func (p *peerState) sendDatagram(str *quic.Stream, b []byte) error {
	if err := context.Cause(str.Context()); err != nil {
		return fromQUICError(err)
	}
	if !p.datagrams {
		return errDatagramsDisabled
	}
	if known, enabled := p.peerDatagrams(); known && !enabled {
		return errors.New("http3: the peer did not enable HTTP datagrams")
	}
	buf := datagramBufPool.Get().(*[]byte)
	*buf = wire.AppendVarint((*buf)[:0], uint64(str.StreamID())/4)
	*buf = append(*buf, b...)
	p.qlog.datagram(true, str.StreamID(), len(*buf))
	err := p.qc.SendDatagram(*buf)
	if cap(*buf) <= datagramBufSize { // one too large to send does not stay pooled
		datagramBufPool.Put(buf)
	}
	return fromQUICError(err)
}
