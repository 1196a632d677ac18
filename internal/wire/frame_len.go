package wire

// FrameLen returns the number of bytes AppendFrame writes for f, for
// packet size accounting.
func FrameLen(f *Frame) int {
	switch f.Type.canonical() {
	case FrameTypePadding:
		return max(f.PaddingLen, 1)
	case FrameTypePing, FrameTypeHandshakeDone:
		return 1
	case FrameTypeAck, FrameTypeAckECN:
		n := AckFrameLen(f.AckRanges, f.AckDelay)
		if f.Type == FrameTypeAckECN {
			n += VarintLen(f.ECT0) + VarintLen(f.ECT1) + VarintLen(f.ECNCE)
		}
		return n
	case FrameTypeResetStream:
		return 1 + VarintLen(f.StreamID) + VarintLen(f.ErrorCode) + VarintLen(f.FinalSize)
	case FrameTypeResetStreamAt:
		return 1 + VarintLen(f.StreamID) + VarintLen(f.ErrorCode) + VarintLen(f.FinalSize) + VarintLen(f.ReliableSize)
	case FrameTypeStopSending:
		return 1 + VarintLen(f.StreamID) + VarintLen(f.ErrorCode)
	case FrameTypeCrypto:
		return CryptoFrameLen(f.Offset, len(f.Data))
	case FrameTypeNewToken:
		return 1 + VarintLen(uint64(len(f.Token))) + len(f.Token)
	case FrameTypeStream:
		return StreamFrameLen(f.StreamID, f.Offset, len(f.Data), f.HasLength)
	case FrameTypeMaxData, FrameTypeDataBlocked, FrameTypeMaxStreamsBidi, FrameTypeMaxStreamsUni,
		FrameTypeStreamsBlockedBidi, FrameTypeStreamsBlockedUni:
		return 1 + VarintLen(f.Limit)
	case FrameTypeMaxStreamData, FrameTypeStreamDataBlocked:
		return 1 + VarintLen(f.StreamID) + VarintLen(f.Limit)
	case FrameTypeNewConnectionID:
		return 1 + VarintLen(f.SequenceNumber) + VarintLen(f.RetirePriorTo) + 1 + len(f.ConnectionID) + 16
	case FrameTypeRetireConnectionID:
		return 1 + VarintLen(f.SequenceNumber)
	case FrameTypePathChallenge, FrameTypePathResponse:
		return 1 + 8
	case FrameTypeConnectionClose, FrameTypeConnectionCloseApp:
		n := 1 + VarintLen(f.ErrorCode) + VarintLen(uint64(len(f.Reason))) + len(f.Reason)
		if f.Type == FrameTypeConnectionClose {
			n += VarintLen(f.TriggerFrameType)
		}
		return n
	case FrameTypeDatagram:
		return DatagramFrameLen(len(f.Data), f.HasLength)
	}
	return 0
}

// AckFrameLen returns the length of an ACK frame (without ECN counts) for
// ranges as AppendAckFrame encodes them.
func AckFrameLen(ranges []AckRange, ackDelay uint64) int {
	if len(ranges) == 0 {
		return 0
	}
	first := ranges[0]
	n := 1 + VarintLen(first.Largest) + VarintLen(ackDelay) + VarintLen(uint64(len(ranges)-1)) +
		VarintLen(first.Largest-first.Smallest)
	prev := first.Smallest
	for _, r := range ranges[1:] {
		n += VarintLen(prev-r.Largest-2) + VarintLen(r.Largest-r.Smallest)
		prev = r.Smallest
	}
	return n
}

// StreamFrameLen returns the length of a STREAM frame carrying dataLen bytes.
func StreamFrameLen(streamID, offset uint64, dataLen int, withLen bool) int {
	n := 1 + VarintLen(streamID) + dataLen
	if offset != 0 {
		n += VarintLen(offset)
	}
	if withLen {
		n += VarintLen(uint64(dataLen))
	}
	return n
}

// CryptoFrameLen returns the length of a CRYPTO frame carrying dataLen bytes.
func CryptoFrameLen(offset uint64, dataLen int) int {
	return 1 + VarintLen(offset) + VarintLen(uint64(dataLen)) + dataLen
}

// DatagramFrameLen returns the length of a DATAGRAM frame carrying dataLen bytes.
func DatagramFrameLen(dataLen int, withLen bool) int {
	n := 1 + dataLen
	if withLen {
		n += VarintLen(uint64(dataLen))
	}
	return n
}

// MaxStreamDataLen returns how many data bytes a STREAM frame for streamID
// at offset can carry in space bytes, or 0 if not even the header fits.
// It also stops at the 2^62-1 stream offset limit.
func MaxStreamDataLen(streamID, offset uint64, space int, withLen bool) int {
	hdr := 1 + VarintLen(streamID)
	if offset != 0 {
		hdr += VarintLen(offset)
	}
	n := fitData(space-hdr, withLen)
	if offset <= MaxVarint && uint64(n) > MaxVarint-offset {
		n = int(MaxVarint - offset)
	}
	return n
}

// MaxCryptoDataLen returns how many data bytes a CRYPTO frame at offset can
// carry in space bytes, or 0 if not even the header fits.
func MaxCryptoDataLen(offset uint64, space int) int {
	return fitData(space-1-VarintLen(offset), true)
}

// MaxDatagramDataLen returns the largest DATAGRAM payload that fits in
// space bytes.
func MaxDatagramDataLen(space int, withLen bool) int {
	return fitData(space-1, withLen)
}

// fitData returns the largest n such that n data bytes, preceded by their
// varint length when withLen is set, fit in avail bytes.
func fitData(avail int, withLen bool) int {
	if avail <= 0 {
		return 0
	}
	if !withLen {
		return avail
	}
	best := 0
	// The length prefix size depends on n itself: try each prefix size
	// and keep the largest n it can describe.
	for _, l := range [...]int{1, 2, 4, 8} {
		n := min(avail-l, 1<<(8*l-2)-1)
		if n > best {
			best = n
		}
	}
	return best
}
