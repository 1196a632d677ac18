package token

import (
	"errors"
	"net/netip"
)

var (
	errCIDTooLong  = errors.New("token: connection ID longer than 20 bytes")
	errInvalidAddr = errors.New("token: invalid client address")
)

// appendAddr encodes ip_len || ip, with IPv4 and IPv4-mapped IPv6 as 4 bytes
// so that a client seen over a dual-stack socket matches either way.
func appendAddr(b []byte, ip netip.Addr) []byte {
	ip = ip.Unmap()
	if ip.Is4() {
		a := ip.As4()
		b = append(b, 4)
		return append(b, a[:]...)
	}
	a := ip.As16()
	b = append(b, 16)
	return append(b, a[:]...)
}

// appendPayload encodes the plaintext payload for typ.
func appendPayload(b []byte, typ Type, client netip.AddrPort, odcid, rscid []byte) ([]byte, error) {
	if !client.Addr().IsValid() {
		return b, errInvalidAddr
	}
	b = appendAddr(b, client.Addr())
	if typ == TypeNewToken {
		return b, nil
	}
	if len(odcid) > MaxCIDLen || len(rscid) > MaxCIDLen {
		return b, errCIDTooLong
	}
	port := client.Port()
	b = append(b, byte(port>>8), byte(port))
	b = append(b, byte(len(odcid)))
	b = append(b, odcid...)
	b = append(b, byte(len(rscid)))
	return append(b, rscid...), nil
}

// payload is a decoded plaintext payload; the CIDs alias the decrypted
// buffer.
type payload struct {
	addr  netip.Addr
	port  uint16
	odcid []byte
	rscid []byte
}

// parsePayload decodes p for typ. It accepts only the canonical encoding
// (IPv4-mapped addresses as 4 bytes, no trailing bytes), as the issuer
// never produces anything else.
func parsePayload(p []byte, typ Type) (payload, bool) {
	var out payload
	if len(p) < 1 {
		return out, false
	}
	n := int(p[0])
	p = p[1:]
	switch {
	case n == 4 && len(p) >= 4:
		out.addr = netip.AddrFrom4([4]byte(p[:4]))
	case n == 16 && len(p) >= 16:
		out.addr = netip.AddrFrom16([16]byte(p[:16]))
		if out.addr.Is4In6() {
			return out, false
		}
	default:
		return out, false
	}
	p = p[n:]
	if typ == TypeNewToken {
		return out, len(p) == 0
	}
	if len(p) < 3 {
		return out, false
	}
	out.port = uint16(p[0])<<8 | uint16(p[1])
	p = p[2:]
	var ok bool
	if out.odcid, p, ok = parseCID(p); !ok {
		return out, false
	}
	if out.rscid, p, ok = parseCID(p); !ok {
		return out, false
	}
	return out, len(p) == 0
}

func parseCID(p []byte) (cid, rest []byte, ok bool) {
	if len(p) < 1 {
		return nil, p, false
	}
	n := int(p[0])
	if n > MaxCIDLen || len(p) < 1+n {
		return nil, p, false
	}
	return p[1 : 1+n : 1+n], p[1+n:], true
}
