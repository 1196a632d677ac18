package http3

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// encodeRegularFields adds the fields of h. Names and values that cannot
// be sent are an error; fields that HTTP/3 forbids or that are sent from
// other sources (Host, Content-Length, Trailer in requests) are dropped.
func (e *fieldEncoder) encodeRegularFields(h http.Header, isRequest bool) {
	for k, vv := range h {
		name := lowerFieldName(k)
		if isConnectionSpecific(name) {
			continue
		}
		switch name {
		case "te":
			if isRequest && slices.ContainsFunc(vv, hasTrailersToken) {
				e.field("te", "trailers")
			}
			continue
		case "host", "content-length", "trailer":
			if isRequest {
				continue
			}
		}
		if !validFieldName(name) {
			e.fail(errors.New("http3: invalid header field name " + strconv.Quote(k)))
			return
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				e.fail(errors.New("http3: invalid value for header field " + strconv.Quote(k)))
				return
			}
			e.field(name, v)
		}
	}
}

func hasTrailersToken(v string) bool {
	for part := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(strings.TrimSpace(part), "trailers") {
			return true
		}
	}
	return false
}

// regularFields collects the regular fields of a section into an
// http.Header and checks the rules common to requests, responses and
// trailers.
type regularFields struct {
	seen          bool
	contentLength int64 // -1 until a content-length field is seen
	cookies       int
	// values backs the first value of each header key, so a section with
	// one value per name costs one allocation instead of one per field.
	values []string
	// log, when set, collects the fields decoded, for qlog.
	log *qlogFields
}

func newRegularFields() regularFields {
	return regularFields{contentLength: -1}
}

// decodeSection decodes the field section p into header: pseudo-header
// fields go to pseudo (nil: none are allowed, as in trailers), regular
// fields through add. A pseudo-header after a regular field is malformed
// (RFC 9114 section 4.3). limit is as for newFieldIter.
func (fs *regularFields) decodeSection(p []byte, limit uint64, header http.Header, isRequest bool, pseudo func(name, value string) error) error {
	it := newFieldIter(p, limit)
	for {
		hf, err := it.field()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fs.log.add(hf.Name, hf.Value, hf.IsPseudo())
		if hf.IsPseudo() {
			if pseudo == nil {
				return malformed("pseudo-header %q in a trailer section", hf.Name)
			}
			if fs.seen {
				return malformed("pseudo-header %q after a regular field", hf.Name)
			}
			if err := pseudo(hf.Name, hf.Value); err != nil {
				return err
			}
			continue
		}
		if err := fs.add(header, hf.Name, hf.Value, isRequest); err != nil {
			return err
		}
	}
}

// add validates and stores one regular field (RFC 9114 section 4.2).
func (fs *regularFields) add(header http.Header, name, value string, isRequest bool) error {
	fs.seen = true
	if !validFieldName(name) {
		return malformed("invalid field name %q", name)
	}
	if !validFieldValue(value) {
		return malformed("invalid value for field %q", name)
	}
	if isConnectionSpecific(name) {
		return malformed("connection-specific field %q", name)
	}
	switch name {
	case "te":
		if !isRequest || value != "trailers" {
			return malformed("te field with value %q", value)
		}
	case "content-length":
		cl, err := strconv.ParseUint(value, 10, 63)
		if err != nil || value[0] == '+' {
			return malformed("invalid content-length %q", value)
		}
		if fs.contentLength >= 0 && fs.contentLength != int64(cl) {
			return malformed("conflicting content-length values")
		}
		if fs.contentLength >= 0 {
			return nil // a repeat of the same value: keep one
		}
		fs.contentLength = int64(cl)
	case "cookie":
		fs.cookies++
	}
	k := canonicalFieldName(name)
	if vv, ok := header[k]; ok {
		header[k] = append(vv, value)
		return nil
	}
	if len(fs.values) == cap(fs.values) {
		fs.values = make([]string, 0, 16)
	}
	fs.values = append(fs.values, value)
	n := len(fs.values)
	header[k] = fs.values[n-1 : n : n] // capped: a second value copies
	return nil
}

// finishCookies joins split cookie fields into one, as RFC 9114 section
// 4.2.1 requires before handing them to HTTP/1.1-style consumers.
func (fs *regularFields) finishCookies(header http.Header) {
	if fs.cookies > 1 {
		header["Cookie"] = []string{strings.Join(header["Cookie"], "; ")}
	}
}

// trailer returns the trailer names a header section announces, as the
// keys of an http.Header with nil values (the net/http convention), and
// removes the Trailer field from header, as net/http does.
func (fs *regularFields) trailer(header http.Header) http.Header {
	fs.finishCookies(header)
	defer delete(header, "Trailer")
	var t http.Header
	for _, v := range header["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			switch name {
			case "", "content-length", "transfer-encoding", "trailer", "host":
				continue // fields that cannot be trailers
			}
			if !validFieldName(name) {
				continue
			}
			if t == nil {
				t = make(http.Header)
			}
			t[canonicalFieldName(name)] = nil
		}
	}
	return t
}

// applyTrailers puts a received trailer section into *dst, the Trailer
// map of a request or response: the fields received, while announced
// names (nil values) that did not arrive are dropped, as quic-go does.
// The map is updated in place when it exists.
func applyTrailers(dst *http.Header, got http.Header) {
	if *dst == nil {
		*dst = got
		return
	}
	for k, v := range *dst {
		if _, ok := got[k]; !ok && v == nil {
			delete(*dst, k)
		}
	}
	maps.Copy(*dst, got)
}
