package wire

// Frame is one parsed QUIC frame. A single struct holds every frame type so
// a connection can parse a whole packet into one reused value without
// allocating; only the fields listed for Type are meaningful. Byte slices
// point into the parsed packet.
type Frame struct {
	// Type is the frame type; STREAM variants are reported as
	// FrameTypeStream and DATAGRAM variants as FrameTypeDatagram, with the
	// flag bits in Fin, HasLength and Offset.
	Type FrameType

	// PaddingLen is the number of consecutive PADDING bytes (PADDING frames
	// are collapsed into one).
	PaddingLen int

	// AckRanges (ACK, ACK_ECN) lists the acknowledged ranges in descending
	// order, AckRanges[0].Largest being the Largest Acknowledged field. The
	// caller owns the backing array: ParseFrame appends to AckRanges[:0],
	// so keeping a Frame across calls reuses its capacity.
	AckRanges []AckRange
	// AckDelay is the encoded ACK Delay, not yet scaled by the peer's
	// ack_delay_exponent.
	AckDelay uint64
	// ECT0, ECT1 and ECNCE are the ECN counts of an ACK_ECN frame.
	ECT0, ECT1, ECNCE uint64

	// StreamID is set for RESET_STREAM, RESET_STREAM_AT, STOP_SENDING,
	// STREAM, MAX_STREAM_DATA and STREAM_DATA_BLOCKED.
	StreamID uint64
	// Offset is the data offset of STREAM and CRYPTO frames.
	Offset uint64
	// Data is the payload of STREAM, CRYPTO and DATAGRAM frames.
	Data []byte
	// Fin is the FIN bit of a STREAM frame.
	Fin bool
	// HasLength tells whether a STREAM or DATAGRAM frame carries a Length
	// field; without it the data runs to the end of the packet.
	HasLength bool

	// ErrorCode is set for RESET_STREAM, RESET_STREAM_AT, STOP_SENDING and
	// CONNECTION_CLOSE.
	ErrorCode uint64
	// FinalSize is the final size of a RESET_STREAM or RESET_STREAM_AT
	// frame.
	FinalSize uint64
	// ReliableSize is the Reliable Size of a RESET_STREAM_AT frame: the
	// bytes still delivered despite the reset (at most FinalSize).
	ReliableSize uint64
	// Limit is the maximum of MAX_DATA, MAX_STREAM_DATA and MAX_STREAMS
	// frames, or the limit at which a *_BLOCKED frame's sender was blocked.
	Limit uint64

	// SequenceNumber is set for NEW_CONNECTION_ID and RETIRE_CONNECTION_ID.
	SequenceNumber uint64
	// RetirePriorTo, ConnectionID and StatelessResetToken are the other
	// NEW_CONNECTION_ID fields.
	RetirePriorTo       uint64
	ConnectionID        []byte
	StatelessResetToken [16]byte

	// PathData is the payload of PATH_CHALLENGE and PATH_RESPONSE.
	PathData [8]byte

	// TriggerFrameType is the Frame Type field of a transport
	// CONNECTION_CLOSE (0x1c): the frame that caused the error.
	TriggerFrameType uint64
	// Reason is the reason phrase of CONNECTION_CLOSE.
	Reason []byte

	// Token is the token of a NEW_TOKEN frame.
	Token []byte
}

// IsAckEliciting reports whether the frame makes its packet ack-eliciting.
func (f *Frame) IsAckEliciting() bool { return f.Type.IsAckEliciting() }
