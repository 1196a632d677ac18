package wire

// AppendRetry appends a Retry packet (RFC 9000 section 17.2.5) without its
// integrity tag. The caller computes the tag over the Retry pseudo-packet
// (RFC 9001 section 5.8) and appends it. dcid is the client's source
// connection ID; scid is the new server connection ID the client must use.
func AppendRetry(b []byte, v Version, dcid, scid, token []byte) []byte {
	h := LongHeader{Type: PacketTypeRetry, Version: v, DestConnID: dcid, SrcConnID: scid, Token: token}
	return AppendLongHeader(b, &h, 0, 0)
}
