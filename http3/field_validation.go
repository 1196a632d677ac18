package http3

import (
	"net/textproto"
	"strings"
)

// fieldOverhead is the per-field overhead that RFC 9114 section 4.2.2 adds
// to name and value lengths when sizing a field section.
const fieldOverhead = 32

// fieldSize is the size of one field for SETTINGS_MAX_FIELD_SECTION_SIZE.
func fieldSize(name, value string) uint64 {
	return uint64(len(name)) + uint64(len(value)) + fieldOverhead
}

// tokenChars marks the bytes allowed in a field name (RFC 9110 section
// 5.1: a token), excluding uppercase letters, which RFC 9114 section 4.2
// forbids in HTTP/3.
var tokenChars = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validFieldName reports whether name is a non-empty lowercase token.
func validFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !tokenChars[name[i]] {
			return false
		}
	}
	return true
}

// validToken reports whether s is a token in any letter case (a method).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if !tokenChars[c] {
			return false
		}
	}
	return true
}

// validFieldValue reports whether v holds no control characters other
// than horizontal tab (RFC 9110 section 5.5; NUL, CR and LF are the
// dangerous ones that RFC 9114 section 4.2 calls out).
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// isConnectionSpecific reports whether the lowercase name is a
// connection-specific field, which HTTP/3 messages must not carry
// (RFC 9114 section 4.2). TE is handled by the callers: a request may send
// it with the value "trailers".
func isConnectionSpecific(name string) bool {
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// commonFieldNames are lowercase names cached with their canonical form,
// so converting between http.Header keys and HTTP/3 names does not
// allocate for them.
var commonFieldNames = []string{
	"accept", "accept-charset", "accept-encoding", "accept-language", "accept-ranges",
	"access-control-allow-credentials", "access-control-allow-headers",
	"access-control-allow-methods", "access-control-allow-origin",
	"access-control-expose-headers", "access-control-max-age",
	"access-control-request-headers", "access-control-request-method",
	"age", "allow", "alt-svc", "authorization", "cache-control", "content-disposition",
	"content-encoding", "content-language", "content-length", "content-location",
	"content-range", "content-security-policy", "content-type", "cookie", "date",
	"early-data", "etag", "expect", "expect-ct", "expires", "forwarded", "from", "host",
	"if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
	"last-modified", "link", "location", "max-forwards", "origin", "priority",
	"proxy-authenticate", "proxy-authorization", "purpose", "range", "referer",
	"refresh", "retry-after", "server", "set-cookie", "strict-transport-security",
	"te", "timing-allow-origin", "trailer", "upgrade-insecure-requests", "user-agent",
	"vary", "via", "www-authenticate", "x-content-type-options", "x-forwarded-for",
	"x-forwarded-proto", "x-frame-options", "x-xss-protection",
}

var (
	lowerOfCanonical = map[string]string{}
	canonicalOfLower = map[string]string{}
)

func init() {
	for _, l := range commonFieldNames {
		c := textproto.CanonicalMIMEHeaderKey(l)
		lowerOfCanonical[c] = l
		canonicalOfLower[l] = c
	}
}

// lowerFieldName returns the HTTP/3 (lowercase) form of an http.Header key.
func lowerFieldName(k string) string {
	if l, ok := lowerOfCanonical[k]; ok {
		return l
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(k)
		}
	}
	return k
}

// canonicalFieldName returns the http.Header key of a valid lowercase name.
func canonicalFieldName(name string) string {
	if c, ok := canonicalOfLower[name]; ok {
		return c
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// authorityChars marks the bytes of an RFC 3986 authority: unreserved,
// percent-encoded, sub-delims, ":" and "@" (rejected later where userinfo
// is not allowed), and "[" "]" for IPv6 literals.
var authorityChars = func() (t [256]bool) {
	for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~%!$&'()*+,;=:@[]" {
		t[c] = true
	}
	return t
}()

// validAuthority reports whether host can be sent as :authority or Host.
// Empty is allowed here; callers reject it where an authority is required.
func validAuthority(host string) bool {
	for i := 0; i < len(host); i++ {
		if !authorityChars[host[i]] {
			return false
		}
	}
	return true
}

// validScheme reports whether s is an RFC 3986 scheme:
// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20 // fold letters to lowercase; other bytes are checked exactly
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (s[i] >= '0' && s[i] <= '9' || s[i] == '+' || s[i] == '-' || s[i] == '.'):
		default:
			return false
		}
	}
	return true
}

// isHTTPScheme reports whether scheme is http or https, whose URIs need
// an authority and a non-empty path (RFC 9114 section 4.3.1). Schemes are
// case-insensitive (RFC 3986 section 3.1).
func isHTTPScheme(scheme string) bool {
	return strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "http")
}
