package proxy

import (
	"errors"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"syscall"
)

// setForwarded sets X-Forwarded-For, -Host, -Proto and Forwarded (RFC
// 7239) on the outbound request from the connection's peer: the
// client's own values (which ReverseProxy removed) are kept, and
// appended to, only for a peer in TrustForwarded.
func (h *Handler) setForwarded(pr *httputil.ProxyRequest) {
	in, out := pr.In, pr.Out
	peer, known := peerAddr(in.RemoteAddr)
	trusted := known && h.trusted(peer)
	proto := "http"
	if in.TLS != nil {
		proto = "https"
	}

	xff := ""
	if known {
		xff = peer.String()
	}
	host, xproto := in.Host, proto
	if trusted {
		if prior := in.Header["X-Forwarded-For"]; len(prior) > 0 {
			xff = strings.Join(prior, ", ") + ", " + xff
		}
		if v := in.Header.Get("X-Forwarded-Host"); v != "" {
			host = v
		}
		if v := in.Header.Get("X-Forwarded-Proto"); v != "" {
			xproto = v
		}
	}
	if xff != "" {
		out.Header.Set("X-Forwarded-For", xff)
	}
	out.Header.Set("X-Forwarded-Host", host)
	out.Header.Set("X-Forwarded-Proto", xproto)

	var b strings.Builder
	if trusted {
		if prior := in.Header["Forwarded"]; len(prior) > 0 {
			b.WriteString(strings.Join(prior, ", "))
			b.WriteString(", ")
		}
	}
	b.WriteString("for=")
	switch {
	case !known:
		b.WriteString("unknown")
	case peer.Is6():
		b.WriteString(`"[` + peer.String() + `]"`) // RFC 7239 section 6: IPv6 in brackets, quoted
	default:
		b.WriteString(peer.String())
	}
	if in.Host != "" {
		b.WriteString(";host=")
		writeForwardedValue(&b, in.Host)
	}
	b.WriteString(";proto=" + proto)
	out.Header.Set("Forwarded", b.String())
}

// peerAddr returns the IP address of a request's RemoteAddr, IPv4-mapped
// addresses as IPv4.
func peerAddr(remote string) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

func (h *Handler) trusted(a netip.Addr) bool {
	for _, p := range h.cfg.TrustForwarded {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// writeForwardedValue writes v as a Forwarded parameter value: a token
// as it is, anything else (a host with a port) as a quoted-string.
func writeForwardedValue(b *strings.Builder, v string) {
	if isToken(v) {
		b.WriteString(v)
		return
	}
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
}

// isToken reports whether v is an RFC 9110 token.
func isToken(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// isRefused reports whether a dial failed because nothing listens there.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

var _ http.RoundTripper = (*poolProxy)(nil)
