package wire

// AppendFrame appends the encoding of f, the inverse of ParseFrame. The
// per-type functions below avoid filling a Frame on hot paths. Values
// that cannot be encoded (varints above 2^62-1, badly ordered ACK ranges,
// connection IDs over 255 bytes) are programming errors and panic.
func AppendFrame(b []byte, f *Frame) []byte {
	t := f.Type
	switch t.canonical() {
	case FrameTypePadding:
		return append(b, make([]byte, max(f.PaddingLen, 1))...)
	case FrameTypePing, FrameTypeHandshakeDone:
		return append(b, byte(t))
	case FrameTypeAck, FrameTypeAckECN:
		if t == FrameTypeAckECN {
			return AppendAckECNFrame(b, f.AckRanges, f.AckDelay, f.ECT0, f.ECT1, f.ECNCE)
		}
		return AppendAckFrame(b, f.AckRanges, f.AckDelay)
	case FrameTypeResetStream:
		b = append(b, byte(t))
		b = AppendVarint(b, f.StreamID)
		b = AppendVarint(b, f.ErrorCode)
		return AppendVarint(b, f.FinalSize)
	case FrameTypeResetStreamAt:
		b = append(b, byte(t))
		b = AppendVarint(b, f.StreamID)
		b = AppendVarint(b, f.ErrorCode)
		b = AppendVarint(b, f.FinalSize)
		return AppendVarint(b, f.ReliableSize)
	case FrameTypeStopSending:
		b = append(b, byte(t))
		b = AppendVarint(b, f.StreamID)
		return AppendVarint(b, f.ErrorCode)
	case FrameTypeCrypto:
		return AppendCryptoFrame(b, f.Offset, f.Data)
	case FrameTypeNewToken:
		b = append(b, byte(t))
		b = AppendVarint(b, uint64(len(f.Token)))
		return append(b, f.Token...)
	case FrameTypeStream:
		return AppendStreamFrame(b, f.StreamID, f.Offset, f.Data, f.Fin, f.HasLength)
	case FrameTypeMaxData, FrameTypeDataBlocked, FrameTypeMaxStreamsBidi, FrameTypeMaxStreamsUni,
		FrameTypeStreamsBlockedBidi, FrameTypeStreamsBlockedUni:
		b = append(b, byte(t))
		return AppendVarint(b, f.Limit)
	case FrameTypeMaxStreamData, FrameTypeStreamDataBlocked:
		b = append(b, byte(t))
		b = AppendVarint(b, f.StreamID)
		return AppendVarint(b, f.Limit)
	case FrameTypeNewConnectionID:
		if len(f.ConnectionID) > 255 {
			panic("wire: NEW_CONNECTION_ID connection ID longer than 255 bytes")
		}
		b = append(b, byte(t))
		b = AppendVarint(b, f.SequenceNumber)
		b = AppendVarint(b, f.RetirePriorTo)
		b = append(b, byte(len(f.ConnectionID)))
		b = append(b, f.ConnectionID...)
		return append(b, f.StatelessResetToken[:]...)
	case FrameTypeRetireConnectionID:
		b = append(b, byte(t))
		return AppendVarint(b, f.SequenceNumber)
	case FrameTypePathChallenge, FrameTypePathResponse:
		b = append(b, byte(t))
		return append(b, f.PathData[:]...)
	case FrameTypeConnectionClose, FrameTypeConnectionCloseApp:
		return AppendConnectionCloseFrame(b, t == FrameTypeConnectionCloseApp, f.ErrorCode, f.TriggerFrameType, f.Reason)
	case FrameTypeDatagram:
		return AppendDatagramFrame(b, f.Data, f.HasLength)
	}
	panic("wire: AppendFrame with unknown frame type " + t.String())
}

// AppendStreamFrame appends a STREAM frame. The OFF bit is set only for a
// non-zero offset; withLen adds the Length field, which only the last
// frame of a packet may omit.
func AppendStreamFrame(b []byte, streamID, offset uint64, data []byte, fin, withLen bool) []byte {
	b = AppendStreamFrameHeader(b, streamID, offset, len(data), fin, withLen)
	return append(b, data...)
}

// AppendStreamFrameHeader appends the fields of a STREAM frame that come
// before its data, for a frame carrying dataLen bytes. The caller appends
// the data itself, so a send buffer can copy straight into the packet.
func AppendStreamFrameHeader(b []byte, streamID, offset uint64, dataLen int, fin, withLen bool) []byte {
	t := byte(FrameTypeStream)
	if offset != 0 {
		t |= streamFlagOff
	}
	if withLen {
		t |= streamFlagLen
	}
	if fin {
		t |= streamFlagFin
	}
	b = append(b, t)
	b = AppendVarint(b, streamID)
	if offset != 0 {
		b = AppendVarint(b, offset)
	}
	if withLen {
		b = AppendVarint(b, uint64(dataLen))
	}
	return b
}

// AppendCryptoFrame appends a CRYPTO frame.
func AppendCryptoFrame(b []byte, offset uint64, data []byte) []byte {
	b = AppendCryptoFrameHeader(b, offset, len(data))
	return append(b, data...)
}

// AppendCryptoFrameHeader appends the fields of a CRYPTO frame that come
// before its dataLen bytes of data; the caller appends the data.
func AppendCryptoFrameHeader(b []byte, offset uint64, dataLen int) []byte {
	b = append(b, byte(FrameTypeCrypto))
	b = AppendVarint(b, offset)
	return AppendVarint(b, uint64(dataLen))
}

// AppendDatagramFrame appends a DATAGRAM frame (RFC 9221), type 0x31 with
// a Length field or 0x30 running to the end of the packet.
func AppendDatagramFrame(b []byte, data []byte, withLen bool) []byte {
	if !withLen {
		b = append(b, byte(FrameTypeDatagram))
		return append(b, data...)
	}
	b = append(b, byte(FrameTypeDatagramWithLen))
	b = AppendVarint(b, uint64(len(data)))
	return append(b, data...)
}

// AppendConnectionCloseFrame appends a CONNECTION_CLOSE frame: type 0x1d
// for an application error, else 0x1c carrying triggerFrameType.
func AppendConnectionCloseFrame(b []byte, app bool, errorCode, triggerFrameType uint64, reason []byte) []byte {
	if app {
		b = append(b, byte(FrameTypeConnectionCloseApp))
		b = AppendVarint(b, errorCode)
	} else {
		b = append(b, byte(FrameTypeConnectionClose))
		b = AppendVarint(b, errorCode)
		b = AppendVarint(b, triggerFrameType)
	}
	b = AppendVarint(b, uint64(len(reason)))
	return append(b, reason...)
}

// AppendAckFrame appends an ACK frame for ranges, which must be non-empty,
// in descending order and separated by at least one missing packet number
// (merge adjacent ranges first); anything else panics. ackDelay is already
// scaled down by our ack_delay_exponent.
func AppendAckFrame(b []byte, ranges []AckRange, ackDelay uint64) []byte {
	b = append(b, byte(FrameTypeAck))
	return appendAckBody(b, ranges, ackDelay)
}

// AppendAckECNFrame appends an ACK_ECN frame: AppendAckFrame plus the
// ECT(0), ECT(1) and ECN-CE counts.
func AppendAckECNFrame(b []byte, ranges []AckRange, ackDelay, ect0, ect1, ecnce uint64) []byte {
	b = append(b, byte(FrameTypeAckECN))
	b = appendAckBody(b, ranges, ackDelay)
	b = AppendVarint(b, ect0)
	b = AppendVarint(b, ect1)
	return AppendVarint(b, ecnce)
}

func appendAckBody(b []byte, ranges []AckRange, ackDelay uint64) []byte {
	if len(ranges) == 0 {
		panic("wire: ACK frame without ranges")
	}
	first := ranges[0]
	if first.Smallest > first.Largest {
		panic("wire: ACK range with Smallest > Largest")
	}
	b = AppendVarint(b, first.Largest)
	b = AppendVarint(b, ackDelay)
	b = AppendVarint(b, uint64(len(ranges)-1))
	b = AppendVarint(b, first.Largest-first.Smallest)
	prev := first.Smallest
	for _, r := range ranges[1:] {
		if r.Smallest > r.Largest || r.Largest+2 > prev {
			panic("wire: ACK ranges not descending and disjoint")
		}
		b = AppendVarint(b, prev-r.Largest-2)
		b = AppendVarint(b, r.Largest-r.Smallest)
		prev = r.Smallest
	}
	return b
}
