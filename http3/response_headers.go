package http3

import (
	"errors"
	"net/http"
	"strconv"
)

// statusStrings holds the decimal form of every valid status code, so
// encoding :status does not allocate.
var statusStrings = func() (s [600]string) {
	for i := 100; i < len(s); i++ {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// encodeResponse appends the field section of a response header to dst
// (RFC 9114 sections 4.2 and 4.3.2). limit is the peer's
// SETTINGS_MAX_FIELD_SECTION_SIZE, 0 for none. Connection-specific fields
// and TE are dropped.
func (e *fieldEncoder) encodeResponse(dst []byte, status int, header http.Header) ([]byte, error) {
	if status < 100 || status >= len(statusStrings) {
		return dst, errors.New("http3: invalid response status " + strconv.Itoa(status))
	}
	e.begin(dst)
	e.field(":status", statusStrings[status])
	e.encodeRegularFields(header, false)
	return e.finish(dst)
}

// encodeTrailers appends the field section of a trailer section to dst.
// Trailers carry no pseudo-headers (section 4.3).
func (e *fieldEncoder) encodeTrailers(dst []byte, trailer http.Header) ([]byte, error) {
	e.begin(dst)
	e.encodeRegularFields(trailer, false)
	return e.finish(dst)
}

// decodeResponse decodes and validates a response header section for a
// client (RFC 9114 sections 4.2 and 4.3.2): exactly one :status with a
// three-digit code from 100 to 599, and no request pseudo-headers. Interim (1xx) responses are returned like final ones;
// the caller keeps reading HEADERS until a final status. limit is our
// SETTINGS_MAX_FIELD_SECTION_SIZE, 0 for none. Errors are as for
// decodeRequest. Body is left to the caller.
func decodeResponse(p []byte, limit uint64) (*http.Response, error) {
	return decodeResponseLogged(p, limit, nil)
}

// decodeResponseLogged is decodeResponse with the fields decoded
// collected in q (nil: not collected).
func decodeResponseLogged(p []byte, limit uint64, q *qlogFields) (*http.Response, error) {
	header := make(http.Header, 8)
	fs := newRegularFields()
	fs.log = q
	status := ""
	haveStatus := false
	err := fs.decodeSection(p, limit, header, false, func(name, value string) error {
		switch {
		case name != ":status":
			return malformed("pseudo-header %q is not allowed in a response", name)
		case haveStatus:
			return malformed("duplicate :status")
		}
		status, haveStatus = value, true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveStatus {
		return nil, malformed("response without :status")
	}
	code, ok := parseStatus(status)
	if !ok {
		return nil, malformed("invalid :status %q", status)
	}
	rsp := &http.Response{
		StatusCode:    code,
		Status:        status,
		Proto:         "HTTP/3.0",
		ProtoMajor:    3,
		Header:        header,
		ContentLength: fs.contentLength,
	}
	if text := http.StatusText(code); text != "" {
		rsp.Status = status + " " + text
	}
	rsp.Trailer = fs.trailer(header)
	return rsp, nil
}

// parseStatus parses a three-digit status code in [100, 599].
func parseStatus(s string) (int, bool) {
	if len(s) != 3 {
		return 0, false
	}
	code := 0
	for i := 0; i < 3; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	return code, code >= 100 && code <= 599
}

// isInterimStatus reports whether a response is interim (1xx), so that a
// final response still follows on the stream.
func isInterimStatus(code int) bool {
	return code >= 100 && code < 200
}

// decodeTrailers decodes and validates a trailer section: no
// pseudo-headers at all (section 4.3), and the field rules of section 4.2.
// isRequest selects whether TE: trailers is acceptable.
func decodeTrailers(p []byte, limit uint64, isRequest bool) (http.Header, error) {
	return decodeTrailersLogged(p, limit, isRequest, nil)
}

// decodeTrailersLogged is decodeTrailers with the fields decoded
// collected in q (nil: not collected).
func decodeTrailersLogged(p []byte, limit uint64, isRequest bool, q *qlogFields) (http.Header, error) {
	header := make(http.Header)
	fs := newRegularFields()
	fs.log = q
	if err := fs.decodeSection(p, limit, header, isRequest, nil); err != nil {
		return nil, err
	}
	fs.finishCookies(header)
	return header, nil
}
