package interopendpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// alpnHQ is the ALPN of HTTP/0.9 over QUIC as the interop runner speaks it.
const alpnHQ = "hq-interop"

// maxRequestLine bounds an hq-interop request: "GET ", a path (the runner's
// longest names are 250 characters) and CRLF.
const maxRequestLine = 4096

// maxPath is the longest path accepted: its request, CRLF included, fits
// maxRequestLine whichever way the request was ended.
const maxPath = maxRequestLine - len("GET \r\n")

var errBadRequest = errors.New("interop: bad hq-interop request")

// appendRequest appends the hq-interop request for path.
func appendRequest(b []byte, path string) []byte {
	b = append(b, "GET "...)
	b = append(b, path...)
	return append(b, "\r\n"...)
}

// readRequest reads one hq-interop request, "GET /path" ended by CRLF (or
// a lone LF, or the stream's FIN), and returns the path. It reads at most
// maxRequestLine bytes.
func readRequest(r io.Reader) (string, error) {
	buf := make([]byte, 0, 512)
	for {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return parseRequestLine(string(buf[:i]))
		}
		if len(buf) >= maxRequestLine {
			return "", fmt.Errorf("%w: longer than %d bytes", errBadRequest, maxRequestLine)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), maxRequestLine)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if bytes.IndexByte(buf, '\n') >= 0 {
				continue
			}
			return parseRequestLine(string(buf))
		}
		if err != nil {
			return "", err
		}
	}
}

func parseRequestLine(line string) (string, error) {
	line = strings.TrimSuffix(line, "\r")
	path, ok := strings.CutPrefix(line, "GET ")
	if !ok || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\x00") {
		return "", fmt.Errorf("%w: %.80q", errBadRequest, line)
	}
	if len(path) > maxPath {
		return "", fmt.Errorf("%w: path longer than %d bytes", errBadRequest, maxPath)
	}
	return path, nil
}
