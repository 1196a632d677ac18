package http3

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// encodeRequest appends the QPACK field section of req's header to dst
// (RFC 9114 sections 4.2, 4.3.1 and 4.4). Connection-specific fields
// and Host (sent as :authority) are left out; TE is sent only as
// "trailers". A request with a :protocol (extended CONNECT, RFC 9220) is a
// CONNECT whose Proto names the protocol (for example "websocket"),
// the convention quic-go uses.
func (e *fieldEncoder) encodeRequest(dst []byte, req *http.Request) ([]byte, error) {
	if req.URL == nil {
		return dst, errors.New("http3: request has no URL")
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !validToken(method) {
		return dst, errors.New("http3: invalid request method " + strconv.Quote(method))
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validAuthority(host) {
		return dst, errors.New("http3: invalid request authority " + strconv.Quote(host))
	}
	e.begin(dst)
	if method == http.MethodConnect && !isExtendedConnect(req) {
		// Section 4.4: only :method and :authority.
		if host == "" {
			return dst, errors.New("http3: CONNECT request without an authority")
		}
		e.field(":authority", host)
		e.field(":method", method)
	} else {
		scheme := req.URL.Scheme
		if scheme == "" {
			scheme = "https"
		}
		path := req.URL.RequestURI()
		if host == "" && isHTTPScheme(scheme) {
			return dst, errors.New("http3: request without a host")
		}
		if !validFieldValue(path) || !validScheme(scheme) {
			return dst, errors.New("http3: invalid request path or scheme")
		}
		if host != "" {
			e.field(":authority", host)
		}
		e.field(":method", method)
		e.field(":path", path)
		e.field(":scheme", scheme)
		if method == http.MethodConnect {
			if !validToken(req.Proto) {
				return dst, errors.New("http3: invalid extended CONNECT protocol " + strconv.Quote(req.Proto))
			}
			e.field(":protocol", req.Proto)
		}
	}
	e.encodeRegularFields(req.Header, true)
	if e.acceptGzip {
		e.field("accept-encoding", "gzip")
	}
	if len(req.Trailer) > 0 {
		e.field("trailer", announcedTrailers(req.Trailer))
	}
	if cl, ok := requestContentLength(req, method); ok {
		e.field("content-length", strconv.FormatInt(cl, 10))
	}
	return e.finish(dst)
}

// isExtendedConnect reports whether a CONNECT request names a protocol
// (RFC 9220) in Proto rather than an HTTP version.
func isExtendedConnect(req *http.Request) bool {
	return req.Proto != "" && !strings.HasPrefix(req.Proto, "HTTP/")
}

// requestContentLength returns the content-length to send: the known
// length of a body, or 0 for an empty body of a method that usually
// carries one (as net/http does).
func requestContentLength(req *http.Request, method string) (int64, bool) {
	if req.ContentLength > 0 {
		return req.ContentLength, true
	}
	if req.ContentLength == 0 && (req.Body == nil || req.Body == http.NoBody) {
		switch method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			return 0, true
		}
	}
	return 0, false
}

// announcedTrailers lists the trailer names for the "trailer" field,
// sorted so the section is deterministic.
func announcedTrailers(t http.Header) string {
	names := make([]string, 0, len(t))
	for k := range t {
		names = append(names, lowerFieldName(k))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
