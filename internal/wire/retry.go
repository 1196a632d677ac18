package wire

// AppendRetry appends a Retry packet (RFC 9000 section 17.2.5) without its
// integrity tag. The caller computes the tag over the pseudo-packet built
// by AppendRetryPseudoPacket and appends it. dcid is the client's source
// connection ID; scid is the new server connection ID the client must use.
func AppendRetry(b []byte, v Version, dcid, scid, token []byte) []byte {
	h := LongHeader{Type: PacketTypeRetry, Version: v, DestConnID: dcid, SrcConnID: scid, Token: token}
	return AppendLongHeader(b, &h, 0, 0)
}

// AppendRetryPseudoPacket appends the Retry pseudo-packet that the Retry
// Integrity Tag is computed over (RFC 9001 section 5.8): the original
// destination connection ID with a length byte, followed by the Retry
// packet without its tag. For a received Retry pass
// packet[:len(packet)-RetryIntegrityTagLen]. An ODCID longer than 255
// bytes panics.
func AppendRetryPseudoPacket(b []byte, odcid, retryWithoutTag []byte) []byte {
	if len(odcid) > 255 {
		panic("wire: original destination connection ID longer than 255 bytes")
	}
	b = append(b, byte(len(odcid)))
	b = append(b, odcid...)
	return append(b, retryWithoutTag...)
}
