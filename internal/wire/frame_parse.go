package wire

import (
	"github.com/turboretry/turboretry/internal/qerr"
)

// Frame parsing errors that do not depend on the input are created once,
// so a peer sending malformed frames cannot make the error path allocate.
var (
	// errTruncated[t] reports a frame of known type t cut short.
	errTruncated [FrameTypeDatagramWithLen + 1]*qerr.TransportError
	// Unknown types report frame type 0, as RFC 9000 section 19.19 allows.
	errUnknownFrameType = qerr.NewFrameEncodingError(0, "unknown frame type")
	errEmptyFrame       = qerr.NewFrameEncodingError(0, "no frame")
)

func init() {
	for t := range errTruncated {
		if FrameType(t).IsKnown() {
			errTruncated[t] = qerr.NewFrameEncodingError(uint64(t), "truncated "+FrameType(t).String()+" frame")
		}
	}
}

// frameError returns a FRAME_ENCODING_ERROR for a frame that parsed but
// carries values the RFC forbids.
func frameError(t FrameType, reason string) error {
	return qerr.NewFrameEncodingError(uint64(t), reason)
}

// frameReader consumes a frame field by field. A read past the end sets
// bad and yields zero values, so parsers check once at the end instead of
// after every field.
type frameReader struct {
	b   []byte
	i   int
	bad bool
}

func (r *frameReader) varint() uint64 {
	b := r.b[r.i:]
	if len(b) == 0 {
		r.bad = true
		return 0
	}
	n := 1 << (b[0] >> 6)
	if len(b) < n {
		r.bad = true
		r.i = len(r.b)
		return 0
	}
	v := uint64(b[0] & 0x3f)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	r.i += n
	return v
}

// bytes returns the next n bytes, or nil and sets bad if fewer remain.
func (r *frameReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)-r.i) {
		r.bad = true
		r.i = len(r.b)
		return nil
	}
	s := r.b[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return s
}

// rest returns everything that is left.
func (r *frameReader) rest() []byte {
	s := r.b[r.i:]
	r.i = len(r.b)
	return s
}

// ParseFrame parses the frame at the start of b into f and returns its
// length. Data, Reason, Token and ConnectionID point into b; AckRanges
// reuses f's backing array. Every encoding error RFC 9000 and RFC 9221
// define is reported as a *qerr.TransportError: FRAME_ENCODING_ERROR for
// malformed or unknown frames, PROTOCOL_VIOLATION for a known frame type
// in a longer encoding than necessary (RFC 9000 section 12.4).
func ParseFrame(b []byte, f *Frame) (int, error) {
	*f = Frame{AckRanges: f.AckRanges[:0]}
	if len(b) == 0 {
		return 0, errEmptyFrame
	}
	if b[0] >= 0x40 {
		// Every frame type we know fits in one byte, so a longer
		// encoding is either an unknown type or a non-minimal one.
		t, _, err := ParseVarint(b)
		if err == nil && FrameType(t).IsKnown() {
			return 0, qerr.NewProtocolViolation(t, "frame type not minimally encoded")
		}
		return 0, errUnknownFrameType
	}
	t := FrameType(b[0])
	r := frameReader{b: b, i: 1}
	f.Type = t
	switch {
	case t == FrameTypePadding:
		n := 1
		for n < len(b) && b[n] == 0 {
			n++
		}
		f.PaddingLen = n
		return n, nil
	case t == FrameTypePing, t == FrameTypeHandshakeDone:
		return 1, nil
	case t == FrameTypeAck, t == FrameTypeAckECN:
		if err := parseAck(&r, f); err != nil {
			return 0, err
		}
	case t == FrameTypeResetStream:
		f.StreamID = r.varint()
		f.ErrorCode = r.varint()
		f.FinalSize = r.varint()
	case t == FrameTypeResetStreamAt:
		f.StreamID = r.varint()
		f.ErrorCode = r.varint()
		f.FinalSize = r.varint()
		f.ReliableSize = r.varint()
		if !r.bad && f.ReliableSize > f.FinalSize {
			return 0, frameError(t, "RESET_STREAM_AT reliable size above final size")
		}
	case t == FrameTypeStopSending:
		f.StreamID = r.varint()
		f.ErrorCode = r.varint()
	case t == FrameTypeCrypto:
		f.Offset = r.varint()
		f.Data = r.bytes(r.varint())
		if !r.bad && f.Offset+uint64(len(f.Data)) > MaxVarint {
			return 0, frameError(t, "CRYPTO data beyond 2^62-1")
		}
	case t == FrameTypeNewToken:
		f.Token = r.bytes(r.varint())
		if !r.bad && len(f.Token) == 0 {
			return 0, frameError(t, "empty NEW_TOKEN token")
		}
	case t >= 0x08 && t <= 0x0f:
		f.Type = FrameTypeStream
		f.StreamID = r.varint()
		if t&streamFlagOff != 0 {
			f.Offset = r.varint()
		}
		f.Fin = t&streamFlagFin != 0
		f.HasLength = t&streamFlagLen != 0
		if f.HasLength {
			f.Data = r.bytes(r.varint())
		} else {
			f.Data = r.rest()
		}
		if !r.bad && f.Offset+uint64(len(f.Data)) > MaxVarint {
			return 0, frameError(t, "STREAM data beyond 2^62-1")
		}
	case t == FrameTypeMaxData, t == FrameTypeDataBlocked:
		f.Limit = r.varint()
	case t == FrameTypeMaxStreamData, t == FrameTypeStreamDataBlocked:
		f.StreamID = r.varint()
		f.Limit = r.varint()
	case t >= FrameTypeMaxStreamsBidi && t <= FrameTypeMaxStreamsUni,
		t >= FrameTypeStreamsBlockedBidi && t <= FrameTypeStreamsBlockedUni:
		f.Limit = r.varint()
		if f.Limit > MaxStreamCount {
			return 0, frameError(t, "stream count above 2^60")
		}
	case t == FrameTypeNewConnectionID:
		f.SequenceNumber = r.varint()
		f.RetirePriorTo = r.varint()
		l := r.bytes(1)
		if r.bad {
			break
		}
		if l[0] == 0 || l[0] > MaxConnIDLen {
			return 0, frameError(t, "NEW_CONNECTION_ID length not in 1..20")
		}
		f.ConnectionID = r.bytes(uint64(l[0]))
		copy(f.StatelessResetToken[:], r.bytes(16))
		if !r.bad && f.RetirePriorTo > f.SequenceNumber {
			return 0, frameError(t, "Retire Prior To above Sequence Number")
		}
	case t == FrameTypeRetireConnectionID:
		f.SequenceNumber = r.varint()
	case t == FrameTypePathChallenge, t == FrameTypePathResponse:
		copy(f.PathData[:], r.bytes(8))
	case t == FrameTypeConnectionClose:
		f.ErrorCode = r.varint()
		f.TriggerFrameType = r.varint()
		f.Reason = r.bytes(r.varint())
	case t == FrameTypeConnectionCloseApp:
		f.ErrorCode = r.varint()
		f.Reason = r.bytes(r.varint())
	case t == FrameTypeDatagram:
		f.Data = r.rest()
	case t == FrameTypeDatagramWithLen:
		f.Type = FrameTypeDatagram
		f.HasLength = true
		f.Data = r.bytes(r.varint())
	default:
		return 0, errUnknownFrameType
	}
	if r.bad {
		return 0, errTruncated[t]
	}
	return r.i, nil
}

// parseAck reads an ACK or ACK_ECN frame body (RFC 9000 section 19.3),
// rejecting ranges that would go below packet number 0.
func parseAck(r *frameReader, f *Frame) error {
	largest := r.varint()
	f.AckDelay = r.varint()
	count := r.varint()
	first := r.varint()
	if r.bad {
		return errTruncated[f.Type]
	}
	if first > largest {
		return frameError(f.Type, "first ACK range below packet number 0")
	}
	// Each further range takes at least two bytes; checking up front
	// stops a huge count from growing AckRanges before truncation shows.
	if count > uint64(len(r.b)-r.i)/2 {
		return errTruncated[f.Type]
	}
	smallest := largest - first
	f.AckRanges = append(f.AckRanges, AckRange{Smallest: smallest, Largest: largest})
	for range count {
		gap := r.varint()
		length := r.varint()
		if r.bad {
			return errTruncated[f.Type]
		}
		if gap+2 > smallest {
			return frameError(f.Type, "ACK range below packet number 0")
		}
		largest = smallest - gap - 2
		if length > largest {
			return frameError(f.Type, "ACK range below packet number 0")
		}
		smallest = largest - length
		f.AckRanges = append(f.AckRanges, AckRange{Smallest: smallest, Largest: largest})
	}
	if f.Type == FrameTypeAckECN {
		f.ECT0 = r.varint()
		f.ECT1 = r.varint()
		f.ECNCE = r.varint()
	}
	return nil
}
