package datapath

import (
	"errors"

	"github.com/turboretry/turboretry/offload/frame"
)

// errMappedAddress rejects IPv6 frames with IPv4-mapped addresses, which
// must not appear on the wire (RFC 4291 section 2.5.5.2): a reply to one
// would come out as an IPv4 frame, and a token would bind a fiction.
var errMappedAddress = errors.New("datapath: IPv4-mapped address in an IPv6 frame")

// checkRequest rejects received frames the datapath does not answer.
func checkRequest(req *frame.UDP) error {
	if req.SrcIP.Is4In6() || req.DstIP.Is4In6() {
		return errMappedAddress
	}
	return nil
}

// encodeReply writes a reply to the frame req was parsed from over that
// same frame: buf is the received frame extended to the end of its UMEM
// frame (cap), req its parsed content, payload the reply's UDP payload,
// which must not alias buf. Source and destination MAC, IP and port are
// swapped; lengths and both checksums are new. It returns the frame length.
//
// req's Payload aliases buf and is overwritten.
func encodeReply(buf []byte, req *frame.UDP, payload []byte) (int, error) {
	if err := checkRequest(req); err != nil {
		return 0, err
	}
	out := frame.UDP{
		Dst:     req.Src,
		Src:     req.Dst,
		SrcIP:   req.DstIP,
		DstIP:   req.SrcIP,
		SrcPort: req.DstPort,
		DstPort: req.SrcPort,
		Payload: payload,
	}
	return out.Encode(buf[:cap(buf)])
}
