package qlog

import (
	"time"
	"unicode/utf8"

	"github.com/turboretry/turboretry/qlogwriter/jsontext"
)

// A Frame is one QUIC frame of a packet event; Frame holds a pointer to
// one of the frame types below (*StreamFrame, *AckFrame, ...).
type Frame struct {
	Frame any
}

// An AckRange is a range of acknowledged packet numbers, both ends included.
type AckRange struct {
	Smallest PacketNumber
	Largest  PacketNumber
}

// An AckFrame is an ACK or ACK_ECN frame. AckRanges go from the highest
// range to the lowest; DelayTime is the decoded ACK delay.
type AckFrame struct {
	AckRanges         []AckRange
	DelayTime         time.Duration
	ECT0, ECT1, ECNCE uint64
}

// A ConnectionCloseFrame is a CONNECTION_CLOSE frame (transport, or
// application with IsApplicationError).
type ConnectionCloseFrame struct {
	IsApplicationError bool
	ErrorCode          uint64
	FrameType          uint64
	ReasonPhrase       string
}

// A DataBlockedFrame is a DATA_BLOCKED frame.
type DataBlockedFrame struct {
	MaximumData ByteCount
}

// A HandshakeDoneFrame is a HANDSHAKE_DONE frame.
type HandshakeDoneFrame struct{}

// A MaxDataFrame is a MAX_DATA frame.
type MaxDataFrame struct {
	MaximumData ByteCount
}

// A MaxStreamDataFrame is a MAX_STREAM_DATA frame.
type MaxStreamDataFrame struct {
	StreamID          StreamID
	MaximumStreamData ByteCount
}

// A MaxStreamsFrame is a MAX_STREAMS frame.
type MaxStreamsFrame struct {
	Type         StreamType
	MaxStreamNum StreamNum
}

// A NewConnectionIDFrame is a NEW_CONNECTION_ID frame.
type NewConnectionIDFrame struct {
	SequenceNumber      uint64
	RetirePriorTo       uint64
	ConnectionID        ConnectionID
	StatelessResetToken StatelessResetToken
}

// A NewTokenFrame is a NEW_TOKEN frame.
type NewTokenFrame struct {
	Token []byte
}

// A PathChallengeFrame is a PATH_CHALLENGE frame.
type PathChallengeFrame struct {
	Data [8]byte
}

// A PathResponseFrame is a PATH_RESPONSE frame.
type PathResponseFrame struct {
	Data [8]byte
}

// A PingFrame is a PING frame.
type PingFrame struct{}

// A ResetStreamFrame is a RESET_STREAM frame, or a RESET_STREAM_AT frame
// when ReliableSize is set.
type ResetStreamFrame struct {
	StreamID     StreamID
	ErrorCode    StreamErrorCode
	FinalSize    ByteCount
	ReliableSize ByteCount
}

// A RetireConnectionIDFrame is a RETIRE_CONNECTION_ID frame.
type RetireConnectionIDFrame struct {
	SequenceNumber uint64
}

// A StopSendingFrame is a STOP_SENDING frame.
type StopSendingFrame struct {
	StreamID  StreamID
	ErrorCode StreamErrorCode
}

// A StreamsBlockedFrame is a STREAMS_BLOCKED frame.
type StreamsBlockedFrame struct {
	Type        StreamType
	StreamLimit StreamNum
}

// A StreamDataBlockedFrame is a STREAM_DATA_BLOCKED frame.
type StreamDataBlockedFrame struct {
	StreamID          StreamID
	MaximumStreamData ByteCount
}

// An AckFrequencyFrame is an ACK_FREQUENCY frame (draft-ietf-quic-ack-frequency).
type AckFrequencyFrame struct {
	SequenceNumber        uint64
	AckElicitingThreshold uint64
	RequestMaxAckDelay    time.Duration
	ReorderingThreshold   PacketNumber
}

// An ImmediateAckFrame is an IMMEDIATE_ACK frame.
type ImmediateAckFrame struct{}

// A CryptoFrame is a CRYPTO frame.
type CryptoFrame struct {
	Offset int64
	Length int64
}

// A StreamFrame is a STREAM frame.
type StreamFrame struct {
	StreamID StreamID
	Offset   int64
	Length   int64
	Fin      bool
}

// A DatagramFrame is a DATAGRAM frame.
type DatagramFrame struct {
	Length int64
}

// frameTypeName is the qlog name of a frame type, "" if unknown.
func frameTypeName(t uint64) string {
	switch {
	case t >= 0x08 && t <= 0x0f:
		return "stream"
	case t == 0x30 || t == 0x31:
		return "datagram"
	}
	names := map[uint64]string{
		0x00: "padding", 0x01: "ping", 0x02: "ack", 0x03: "ack", 0x04: "reset_stream", 0x05: "stop_sending",
		0x06: "crypto", 0x07: "new_token", 0x10: "max_data", 0x11: "max_stream_data", 0x12: "max_streams",
		0x13: "max_streams", 0x14: "data_blocked", 0x15: "stream_data_blocked", 0x16: "streams_blocked",
		0x17: "streams_blocked", 0x18: "new_connection_id", 0x19: "retire_connection_id",
		0x1a: "path_challenge", 0x1b: "path_response", 0x1c: "connection_close", 0x1d: "connection_close",
		0x1e: "handshake_done", 0x24: "reset_stream_at", 0xaf: "ack_frequency", 0x1f: "immediate_ack",
	}
	return names[t]
}

func streamTypeName(t StreamType) string {
	if t == StreamTypeBidi {
		return "bidirectional"
	}
	return "unidirectional"
}

// Encode writes the frame as a qlog QuicFrame object.
func (f Frame) Encode(enc *jsontext.Encoder) error {
	e := &encoder{enc: enc}
	e.begin()
	switch fr := f.Frame.(type) {
	case *PingFrame:
		e.str("frame_type", "ping")
	case *AckFrame:
		e.str("frame_type", "ack")
		if fr.DelayTime > 0 {
			e.ms("ack_delay", fr.DelayTime)
		}
		e.name("acked_ranges")
		e.beginArray()
		for _, r := range fr.AckRanges {
			e.beginArray()
			e.tok(jsontext.Int(int64(r.Smallest)))
			if r.Largest != r.Smallest {
				e.tok(jsontext.Int(int64(r.Largest)))
			}
			e.endArray()
		}
		e.endArray()
		if fr.ECT0 > 0 || fr.ECT1 > 0 || fr.ECNCE > 0 {
			e.uint("ect0", fr.ECT0)
			e.uint("ect1", fr.ECT1)
			e.uint("ce", fr.ECNCE)
		}
	case *ResetStreamFrame:
		if fr.ReliableSize > 0 {
			e.str("frame_type", "reset_stream_at")
		} else {
			e.str("frame_type", "reset_stream")
		}
		e.int("stream_id", int64(fr.StreamID))
		e.uint("error_code", uint64(fr.ErrorCode))
		e.int("final_size", int64(fr.FinalSize))
		if fr.ReliableSize > 0 {
			e.int("reliable_size", int64(fr.ReliableSize))
		}
	case *StopSendingFrame:
		e.str("frame_type", "stop_sending")
		e.int("stream_id", int64(fr.StreamID))
		e.uint("error_code", uint64(fr.ErrorCode))
	case *CryptoFrame:
		e.str("frame_type", "crypto")
		e.int("offset", fr.Offset)
		e.int("length", fr.Length)
	case *NewTokenFrame:
		e.str("frame_type", "new_token")
		e.name("token")
		e.value(Token{Raw: fr.Token}.encode)
	case *StreamFrame:
		e.str("frame_type", "stream")
		e.int("stream_id", int64(fr.StreamID))
		e.int("offset", fr.Offset)
		e.int("length", fr.Length)
		if fr.Fin {
			e.bool("fin", true)
		}
	case *MaxDataFrame:
		e.str("frame_type", "max_data")
		e.int("maximum", int64(fr.MaximumData))
	case *MaxStreamDataFrame:
		e.str("frame_type", "max_stream_data")
		e.int("stream_id", int64(fr.StreamID))
		e.int("maximum", int64(fr.MaximumStreamData))
	case *MaxStreamsFrame:
		e.str("frame_type", "max_streams")
		e.str("stream_type", streamTypeName(fr.Type))
		e.int("maximum", int64(fr.MaxStreamNum))
	case *DataBlockedFrame:
		e.str("frame_type", "data_blocked")
		e.int("limit", int64(fr.MaximumData))
	case *StreamDataBlockedFrame:
		e.str("frame_type", "stream_data_blocked")
		e.int("stream_id", int64(fr.StreamID))
		e.int("limit", int64(fr.MaximumStreamData))
	case *StreamsBlockedFrame:
		e.str("frame_type", "streams_blocked")
		e.str("stream_type", streamTypeName(fr.Type))
		e.int("limit", int64(fr.StreamLimit))
	case *NewConnectionIDFrame:
		e.str("frame_type", "new_connection_id")
		e.uint("sequence_number", fr.SequenceNumber)
		e.uint("retire_prior_to", fr.RetirePriorTo)
		e.str("connection_id", fr.ConnectionID.String())
		e.hex("stateless_reset_token", fr.StatelessResetToken[:])
	case *RetireConnectionIDFrame:
		e.str("frame_type", "retire_connection_id")
		e.uint("sequence_number", fr.SequenceNumber)
	case *PathChallengeFrame:
		e.str("frame_type", "path_challenge")
		e.hex("data", fr.Data[:])
	case *PathResponseFrame:
		e.str("frame_type", "path_response")
		e.hex("data", fr.Data[:])
	case *ConnectionCloseFrame:
		e.str("frame_type", "connection_close")
		space, name := "application", ""
		if !fr.IsApplicationError {
			space, name = "transport", transportErrorName(TransportErrorCode(fr.ErrorCode))
		}
		e.str("error_space", space)
		if name != "" {
			e.str("error", name)
		} else {
			e.str("error", "unknown")
			e.uint("error_code", fr.ErrorCode)
		}
		if utf8.ValidString(fr.ReasonPhrase) {
			e.str("reason", fr.ReasonPhrase)
		} else {
			e.hex("reason_bytes", []byte(fr.ReasonPhrase))
		}
		if !fr.IsApplicationError && fr.FrameType != 0 {
			if n := frameTypeName(fr.FrameType); n != "" {
				e.str("trigger_frame_type", n)
			} else {
				e.uint("trigger_frame_type", fr.FrameType)
			}
		}
	case *HandshakeDoneFrame:
		e.str("frame_type", "handshake_done")
	case *DatagramFrame:
		e.str("frame_type", "datagram")
		e.int("length", fr.Length)
	case *AckFrequencyFrame:
		e.str("frame_type", "ack_frequency")
		e.uint("sequence_number", fr.SequenceNumber)
		e.uint("ack_eliciting_threshold", fr.AckElicitingThreshold)
		e.ms("request_max_ack_delay", fr.RequestMaxAckDelay)
		e.int("reordering_threshold", int64(fr.ReorderingThreshold))
	case *ImmediateAckFrame:
		e.str("frame_type", "immediate_ack")
	default:
		e.str("frame_type", "unknown")
	}
	e.end()
	return e.err
}

func encodeFrames(enc *jsontext.Encoder, frames []Frame) error {
	e := &encoder{enc: enc}
	e.beginArray()
	for _, f := range frames {
		e.value(f.Encode)
	}
	e.endArray()
	return e.err
}
