package http3

import (
	"net/http"
	"net/url"
	"strings"
)

// Pseudo-header presence bits.
const (
	pseudoMethod = 1 << iota
	pseudoScheme
	pseudoAuthority
	pseudoPath
	pseudoProtocol
)

// requestPseudo holds the pseudo-header fields of a request.
type requestPseudo struct {
	have                                      uint8
	method, scheme, authority, path, protocol string
}

// set records one request pseudo-header; unknown and repeated ones make
// the request malformed (RFC 9114 section 4.3).
func (p *requestPseudo) set(name, value string) error {
	var bit uint8
	var dst *string
	switch name {
	case ":method":
		bit, dst = pseudoMethod, &p.method
	case ":scheme":
		bit, dst = pseudoScheme, &p.scheme
	case ":authority":
		bit, dst = pseudoAuthority, &p.authority
	case ":path":
		bit, dst = pseudoPath, &p.path
	case ":protocol":
		bit, dst = pseudoProtocol, &p.protocol
	default:
		return malformed("pseudo-header %q is not allowed in a request", name)
	}
	if p.have&bit != 0 {
		return malformed("duplicate pseudo-header %q", name)
	}
	p.have |= bit
	*dst = value
	return nil
}

// decodeRequest decodes a request header section for a server and
// validates it (RFC 9114 sections 4.2, 4.3 and 4.4, and RFC 9220 for
// extended CONNECT when extendedConnect, our
// SETTINGS_ENABLE_CONNECT_PROTOCOL, is set). limit is our
// SETTINGS_MAX_FIELD_SECTION_SIZE, 0 for none. A malformed request is
// H3_MESSAGE_ERROR, an undecodable section QPACK_DECOMPRESSION_FAILED, an
// oversized one H3_EXCESSIVE_LOAD wrapping errFieldSectionTooLarge.
//
// The request has no Body, and ContentLength is -1 unless content-length
// was sent: the caller, which sees the stream, fills both in.
func decodeRequest(p []byte, limit uint64, extendedConnect bool) (*http.Request, error) {
	return decodeRequestLogged(p, limit, extendedConnect, nil)
}

// decodeRequestLogged is decodeRequest with the fields decoded collected
// in q (nil: not collected).
func decodeRequestLogged(p []byte, limit uint64, extendedConnect bool, q *qlogFields) (*http.Request, error) {
	var ps requestPseudo
	header := make(http.Header, 8)
	fs := newRegularFields()
	fs.log = q
	if err := fs.decodeSection(p, limit, header, true, ps.set); err != nil {
		return nil, err
	}
	if err := ps.validate(header, extendedConnect); err != nil {
		return nil, err
	}
	return ps.request(header, &fs)
}

// validate checks the pseudo-header set of a request.
func (p *requestPseudo) validate(header http.Header, extendedConnect bool) error {
	if p.have&pseudoMethod == 0 {
		return malformed("request without :method")
	}
	if !validToken(p.method) {
		return malformed("invalid :method %q", p.method)
	}
	if p.have&pseudoAuthority != 0 && !validAuthority(p.authority) {
		return malformed("invalid :authority %q", p.authority)
	}
	if p.have&pseudoScheme != 0 && !validScheme(p.scheme) {
		return malformed("invalid :scheme %q", p.scheme)
	}
	if p.have&pseudoProtocol != 0 && !validToken(p.protocol) {
		return malformed("invalid :protocol %q", p.protocol)
	}
	if h := header["Host"]; len(h) > 0 && !validAuthority(h[0]) {
		return malformed("invalid host %q", h[0])
	}
	isConnect := p.method == http.MethodConnect
	switch {
	case p.have&pseudoProtocol != 0:
		// RFC 9220 section 3: only in a CONNECT, only when we enabled it,
		// and with :scheme, :path and :authority.
		if !extendedConnect || !isConnect {
			return malformed(":protocol in a request that is not an enabled extended CONNECT")
		}
		if p.have&(pseudoScheme|pseudoPath|pseudoAuthority) != pseudoScheme|pseudoPath|pseudoAuthority ||
			p.authority == "" || p.path == "" {
			return malformed("extended CONNECT without :scheme, :path and :authority")
		}
	case isConnect:
		// Section 4.4: :scheme and :path omitted, :authority present.
		if p.have&(pseudoScheme|pseudoPath) != 0 {
			return malformed("CONNECT with :scheme or :path")
		}
		if p.authority == "" {
			return malformed("CONNECT without :authority")
		}
		return nil
	default:
		if p.have&(pseudoScheme|pseudoPath) != pseudoScheme|pseudoPath {
			return malformed("request without :scheme or :path")
		}
	}
	hosts := header.Values("Host")
	if len(hosts) > 1 {
		return malformed("more than one host field")
	}
	if p.have&pseudoAuthority != 0 && len(hosts) == 1 && hosts[0] != p.authority {
		return malformed(":authority %q and host %q differ", p.authority, hosts[0])
	}
	if isHTTPScheme(p.scheme) {
		// Section 4.3.1: a non-empty path, an authority (or host) without
		// userinfo.
		if p.path == "" {
			return malformed("empty :path")
		}
		if p.path[0] != '/' && (p.path != "*" || p.method != http.MethodOptions) {
			return malformed(":path %q is neither absolute nor * in OPTIONS", p.path)
		}
		authority := p.authority
		if p.have&pseudoAuthority == 0 && len(hosts) == 1 {
			authority = hosts[0]
		}
		if authority == "" {
			return malformed("request without :authority or host")
		}
		if strings.Contains(authority, "@") {
			return malformed(":authority contains userinfo")
		}
	}
	return nil
}

// request builds the *http.Request from validated fields.
func (p *requestPseudo) request(header http.Header, fs *regularFields) (*http.Request, error) {
	req := &http.Request{
		Method:        p.method,
		Proto:         "HTTP/3.0",
		ProtoMajor:    3,
		Header:        header,
		ContentLength: fs.contentLength,
		Host:          p.authority,
	}
	if req.Host == "" {
		req.Host = header.Get("Host")
	}
	delete(header, "Host") // net/http promotes Host to Request.Host
	if p.method == http.MethodConnect && p.have&pseudoProtocol == 0 {
		req.URL = &url.URL{Host: p.authority}
		req.RequestURI = p.authority
	} else {
		// As net/http's servers (HTTP/1.1 origin form, HTTP/2) and
		// quic-go: the URL is the parsed :path, without scheme and host
		// (which are in TLS and Host).
		u, err := url.ParseRequestURI(p.path)
		if err != nil {
			return nil, malformed("invalid :path %q", p.path)
		}
		req.URL, req.RequestURI = u, p.path
		if p.have&pseudoProtocol != 0 {
			req.Proto = p.protocol
		}
	}
	req.Trailer = fs.trailer(header)
	return req, nil
}
