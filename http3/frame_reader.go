package http3

import (
	"errors"
	"io"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/quic"
)

// defaultMaxFrameSize bounds the payload of the frames that are read whole
// (HEADERS, PUSH_PROMISE, SETTINGS) when the caller sets no limit.
const defaultMaxFrameSize = 64 << 10

// frameReader reads HTTP/3 frames from one stream (RFC 9114 section 7.1).
// next returns the header of the next frame this package knows, skipping
// unknown and reserved types (section 7.2.8); the payload is then read
// with Read (DATA, streamed without buffering) or readPayload (the
// size-limited frames). Unread payload is discarded by the next call to
// next.
type frameReader struct {
	r  io.Reader
	br io.ByteReader // r, when it can read single bytes cheaply

	// maxFrameSize bounds the payload of HEADERS, PUSH_PROMISE and SETTINGS
	// frames; a larger one is H3_EXCESSIVE_LOAD. Zero means
	// defaultMaxFrameSize. DATA and unknown frames are never buffered and
	// have no limit.
	maxFrameSize uint64

	// onSkip, when set, is called with the type of every frame that next
	// skips; an error it returns ends next. The control stream uses it to
	// reject a reserved frame sent before SETTINGS.
	onSkip func(FrameType) error

	// qlog, when set, records the frames read as FrameParsed events of
	// stream qlogID: DATA and skipped frames when their header is read,
	// the control frames once parsed, HEADERS through logHeaders once
	// decoded (or with no fields when refused for their size).
	qlog   *qlogProducer
	qlogID quic.StreamID

	cur       frameHeader
	remaining uint64 // unread payload bytes of cur
	one       [1]byte
	varint    [8]byte
	discard   []byte // scratch for skipping payloads, allocated on first use
}

func newFrameReader(r io.Reader, maxFrameSize uint64) *frameReader {
	fr := &frameReader{r: r, maxFrameSize: maxFrameSize}
	fr.br, _ = r.(io.ByteReader)
	return fr
}

func (fr *frameReader) limit() uint64 {
	if fr.maxFrameSize == 0 {
		return defaultMaxFrameSize
	}
	return fr.maxFrameSize
}

// errTruncatedFrame is the cause of the H3_FRAME_ERROR returned when a
// stream ends inside a frame (section 7.1).
var errTruncatedFrame = errors.New("http3: stream ended inside a frame")

func truncatedFrame(what string) error {
	return wrapError(ErrCodeFrameError, errTruncatedFrame, "stream ended inside %s", what)
}

func (fr *frameReader) readByte() (byte, error) {
	if fr.br != nil {
		return fr.br.ReadByte()
	}
	_, err := io.ReadFull(fr.r, fr.one[:])
	return fr.one[0], err
}

// readVarint reads one varint. At a frame boundary (first) a clean io.EOF
// before any byte is returned as io.EOF; an end anywhere else is a
// truncated frame.
func (fr *frameReader) readVarint(first bool) (uint64, error) {
	b0, err := fr.readByte()
	if err != nil {
		if err == io.EOF && !first {
			return 0, truncatedFrame("a frame header")
		}
		return 0, err
	}
	n := 1 << (b0 >> 6)
	v := uint64(b0 & 0x3f)
	if n == 1 {
		return v, nil
	}
	rest := fr.varint[:n-1]
	if fr.br != nil {
		for i := range rest {
			if rest[i], err = fr.br.ReadByte(); err != nil {
				break
			}
		}
	} else {
		_, err = io.ReadFull(fr.r, rest)
	}
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, truncatedFrame("a frame header")
		}
		return 0, err
	}
	for _, b := range rest {
		v = v<<8 | uint64(b)
	}
	return v, nil
}

// next discards what is left of the current frame and returns the header
// of the next known frame. It returns io.EOF when the stream ends cleanly
// between frames.
func (fr *frameReader) next() (frameHeader, error) {
	if err := fr.skipPayload(); err != nil {
		return frameHeader{}, err
	}
	for {
		t, err := fr.readVarint(true)
		if err != nil {
			return frameHeader{}, err
		}
		l, err := fr.readVarint(false)
		if err != nil {
			return frameHeader{}, err
		}
		fh := frameHeader{Type: FrameType(t), Length: l}
		fr.cur, fr.remaining = fh, l
		switch {
		case fh.Type.isKnown():
			if err := fr.checkLength(fh); err != nil {
				if fh.Type == frameTypeHeaders {
					fr.logParsed(qlog.HeadersFrame{})
				}
				return frameHeader{}, err
			}
			if fh.Type == frameTypeData {
				fr.logParsed(qlog.DataFrame{})
			}
			return fh, nil
		case fh.Type.isHTTP2Only():
			return frameHeader{}, newError(ErrCodeFrameUnexpected, "received %s", fh.Type)
		}
		if fr.qlog != nil {
			fr.logParsed(qlogSkippedFrame(fh.Type))
		}
		if fr.onSkip != nil {
			if err := fr.onSkip(fh.Type); err != nil {
				return frameHeader{}, err
			}
		}
		if err := fr.skipPayload(); err != nil {
			return frameHeader{}, err
		}
	}
}

// checkLength rejects lengths no valid frame of the type can have, before
// any of the payload is read.
func (fr *frameReader) checkLength(fh frameHeader) error {
	switch {
	case fh.Type == frameTypeData:
		return nil
	case fh.Type.hasSingleVarintPayload():
		if fh.Length == 0 || fh.Length > 8 {
			return newError(ErrCodeFrameError, "%s frame with length %d", fh.Type, fh.Length)
		}
	case fh.Length > fr.limit():
		return newError(ErrCodeExcessiveLoad, "http3: %s frame too large: %d bytes (max: %d)", fh.Type, fh.Length, fr.limit())
	}
	return nil
}

// logParsed records the current frame as parsed.
func (fr *frameReader) logParsed(f any) {
	fr.qlog.frameParsed(fr.qlogID, fr.cur.Type, fr.cur.Length, f)
}

// headerLog returns the collector of the fields of a HEADERS frame about
// to be decoded, nil when frames are not logged.
func (fr *frameReader) headerLog() *qlogFields {
	if fr.qlog == nil {
		return nil
	}
	return &qlogFields{on: true}
}

// logHeaders records the current HEADERS frame with the fields decoded
// from it (all of them, or those before a decoding error).
func (fr *frameReader) logHeaders(q *qlogFields) {
	if fr.qlog != nil {
		fr.logParsed(q.frame())
	}
}

// Read reads payload bytes of the current frame. It returns io.EOF at the
// end of the payload, and H3_FRAME_ERROR when the stream ends before it.
func (fr *frameReader) Read(p []byte) (int, error) {
	if fr.remaining == 0 {
		return 0, io.EOF
	}
	if uint64(len(p)) > fr.remaining {
		p = p[:fr.remaining]
	}
	n, err := fr.r.Read(p)
	fr.remaining -= uint64(n)
	if err == io.EOF {
		if fr.remaining > 0 {
			return n, truncatedFrame("a " + fr.cur.Type.String() + " frame")
		}
		err = nil // the next call to next sees the end of the stream
	}
	return n, err
}

// payloadChunk is the first allocation for a payload read whole, and the
// least it grows by: a frame's declared length is only an upper bound,
// so memory follows the bytes that arrive (a peer that declares 1 MiB
// and sends 500 bytes costs one chunk, not 1 MiB).
const payloadChunk = 4 << 10

// readPayload appends the whole remaining payload of the current frame to
// dst. next has already checked its length against the limit. dst grows
// as the payload arrives, doubling at most, never to more than the
// declared length.
func (fr *frameReader) readPayload(dst []byte) ([]byte, error) {
	if fr.cur.Type == frameTypeData && fr.remaining > fr.limit() {
		return dst, newError(ErrCodeExcessiveLoad, "DATA frame of %d bytes is too large to buffer", fr.remaining)
	}
	start := len(dst)
	for fr.remaining > 0 {
		if len(dst) == cap(dst) {
			grow := uint64(max(len(dst)-start, payloadChunk))
			grown := make([]byte, len(dst), len(dst)+int(min(grow, fr.remaining)))
			copy(grown, dst)
			dst = grown
		}
		room := min(uint64(cap(dst)-len(dst)), fr.remaining)
		n, err := fr.r.Read(dst[len(dst) : len(dst)+int(room)])
		dst = dst[:len(dst)+n]
		fr.remaining -= uint64(n)
		if err == nil || (err == io.EOF && fr.remaining == 0) {
			continue
		}
		fr.remaining = 0
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return dst[:start], truncatedFrame("a " + fr.cur.Type.String() + " frame")
		}
		return dst[:start], err
	}
	return dst, nil
}

// skipPayload discards the rest of the current frame's payload.
func (fr *frameReader) skipPayload() error {
	if fr.remaining == 0 {
		return nil
	}
	if fr.discard == nil {
		fr.discard = make([]byte, 1024)
	}
	for fr.remaining > 0 {
		if _, err := fr.Read(fr.discard); err != nil {
			return err
		}
	}
	return nil
}

// readFrame reads the next known frame. DATA frames are returned as their
// header, with the payload left for Read; every other frame is read and
// parsed whole.
func (fr *frameReader) readFrame() (frame, error) {
	return fr.readFrameChecked(nil)
}

// readFrameChecked is readFrame with check, when not nil, called with the
// type of each frame before its payload is read, so a frame that is not
// allowed is rejected without buffering it. Frames other than DATA and
// HEADERS are logged once parsed.
func (fr *frameReader) readFrameChecked(check func(FrameType) error) (frame, error) {
	f, err := fr.readFrameUnlogged(check)
	if err == nil && fr.qlog != nil {
		if q := qlogFrameOf(f); q != nil {
			fr.logParsed(q)
		}
	}
	return f, err
}

func (fr *frameReader) readFrameUnlogged(check func(FrameType) error) (frame, error) {
	fh, err := fr.next()
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(fh.Type); err != nil {
			return nil, err
		}
	}
	if fh.Type == frameTypeData {
		return dataFrame{Length: fh.Length}, nil
	}
	p, err := fr.readPayload(nil)
	if err != nil {
		return nil, err
	}
	switch fh.Type {
	case frameTypeHeaders:
		return headersFrame{FieldSection: p}, nil
	case frameTypeSettings:
		s, err := parseSettings(p)
		if err != nil {
			return nil, err
		}
		return s, nil
	case frameTypePushPromise:
		pp, err := parsePushPromisePayload(p)
		if err != nil {
			return nil, err
		}
		return pp, nil
	}
	v, err := parseSingleVarintPayload(fh.Type, p)
	if err != nil {
		return nil, err
	}
	switch fh.Type {
	case frameTypeCancelPush:
		return cancelPushFrame{PushID: v}, nil
	case frameTypeGoAway:
		return goAwayFrame{ID: v}, nil
	default: // frameTypeMaxPushID: next returns known types only
		return maxPushIDFrame{PushID: v}, nil
	}
}
