package http3

import (
	"errors"
	"io"
)

// The peer's QPACK encoder and decoder streams (RFC 9204 section 4.2)
// carry instructions about dynamic tables. We advertise a maximum table
// capacity of 0 (SETTINGS_QPACK_MAX_TABLE_CAPACITY left at its default)
// and our encoder never uses the peer's table, so almost every
// instruction is an error; the readers below check each one as it
// arrives and keep nothing.

// maxQPACKInt is the largest prefix integer we decode: RFC 9204 section
// 4.1.1 requires 62 bits, and no field we read can be larger.
const maxQPACKInt = 1<<62 - 1

var errQPACKIntTooLarge = errors.New("http3: QPACK integer exceeds 62 bits")

// readPrefixInt reads an integer with an n-bit prefix (RFC 9204 section
// 4.1.1, RFC 7541 section 5.1) whose first byte b0 was already read.
func readPrefixInt(br io.ByteReader, b0 byte, n uint) (uint64, error) {
	mask := byte(1<<n - 1)
	v := uint64(b0 & mask)
	if b0&mask < mask {
		return v, nil
	}
	for shift := uint(0); ; shift += 7 {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if shift > 56 {
			return 0, errQPACKIntTooLarge
		}
		v += uint64(b&0x7f) << shift
		if v > maxQPACKInt {
			return 0, errQPACKIntTooLarge
		}
		if b&0x80 == 0 {
			return v, nil
		}
	}
}

// readEncoderStream checks the peer's encoder stream (after its type)
// until it or the connection ends. The only instruction valid for a
// table of capacity 0 is Set Dynamic Table Capacity with 0 (section
// 4.3.1), the single byte 0x20; any other capacity exceeds our maximum
// (already known from a non-zero prefix), any insertion exceeds the
// capacity (sections 4.3.2, 4.3.3) and a Duplicate names an entry that
// does not exist (section 4.3.4): all QPACK_ENCODER_STREAM_ERROR, found
// from the instruction's first byte. It returns the connection error,
// nil when the connection itself went away.
func readEncoderStream(br io.ByteReader) error {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return qpackStreamEnded(streamTypeQPACKEncoder, err)
		}
		switch {
		case b == 0x20:
			continue // Set Dynamic Table Capacity 0
		case b&0x80 != 0:
			return newError(ErrCodeQPACKEncoderStreamError, "Insert With Name Reference into a dynamic table of capacity 0")
		case b&0x40 != 0:
			return newError(ErrCodeQPACKEncoderStreamError, "Insert With Literal Name into a dynamic table of capacity 0")
		case b&0x20 != 0:
			return newError(ErrCodeQPACKEncoderStreamError, "Set Dynamic Table Capacity above our maximum of 0")
		default:
			return newError(ErrCodeQPACKEncoderStreamError, "Duplicate in an empty dynamic table")
		}
	}
}

// readDecoderStream checks the peer's decoder stream (after its type).
// Our encoder never references the dynamic table, so no field section
// is ever waiting for an acknowledgment (section 4.4.1) and no insert
// count can grow (section 4.4.3): both are QPACK_DECODER_STREAM_ERROR.
// Stream Cancellation is always valid (section 4.4.2). Returns as
// readEncoderStream.
func readDecoderStream(br io.ByteReader) error {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return qpackStreamEnded(streamTypeQPACKDecoder, err)
		}
		switch {
		case b&0x80 != 0:
			id, err := readPrefixInt(br, b, 7)
			if err != nil {
				return qpackInstructionError(err)
			}
			return newError(ErrCodeQPACKDecoderStreamError, "Section Acknowledgment for stream %d, which has no section to acknowledge", id)
		case b&0x40 != 0:
			if _, err := readPrefixInt(br, b, 6); err != nil {
				return qpackInstructionError(err)
			}
		default:
			inc, err := readPrefixInt(br, b, 6)
			if err != nil {
				return qpackInstructionError(err)
			}
			return newError(ErrCodeQPACKDecoderStreamError, "Insert Count Increment of %d, but we inserted nothing", inc)
		}
	}
}

// qpackStreamEnded returns the error for a QPACK stream whose read
// failed between instructions: its end or reset closes a critical stream
// (section 4.2); other errors mean the connection went away.
func qpackStreamEnded(t StreamType, err error) error {
	if err == io.EOF || isStreamReset(err) {
		return newError(ErrCodeClosedCriticalStream, "peer closed its %s stream", t)
	}
	return nil
}

// qpackInstructionError returns the error for a read that failed inside
// a decoder-stream instruction.
func qpackInstructionError(err error) error {
	if errors.Is(err, errQPACKIntTooLarge) {
		return wrapError(ErrCodeQPACKDecoderStreamError, err, "decoder stream: %v", err)
	}
	return qpackStreamEnded(streamTypeQPACKDecoder, err)
}
