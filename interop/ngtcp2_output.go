package interop

import (
	"regexp"
	"strconv"
	"strings"
)

// ngtcp2's example programs exit 0 whatever happened, so the tests read
// their output instead. They report failures on lines of a few shapes:
//
//	ngtcp2_conn_read_pkt: ERR_PROTO           (a library call failed)
//	Could not bind / Unable to ...            (setup failed)
//	HTTP stream 0 closed with error code 258  (an HTTP/3 stream reset)
//	... frm rx 7 1RTT CONNECTION_CLOSE(0x1c) error_code=PROTOCOL_VIOLATION(0xa) ...
var (
	libCallFailed  = regexp.MustCompile(`^(?:ngtcp2|nghttp3|gnutls)_\w+: `)
	streamClosed   = regexp.MustCompile(`closed with error code (\d+)`)
	closeReceived  = regexp.MustCompile(`frm rx .*CONNECTION_CLOSE\(0x(1[cd])\) error_code=\S*\(0x([0-9a-fA-F]+)\)`)
	setupFailed    = regexp.MustCompile(`^(?:Could not|Unable to|Invalid|Timeout|Idle timeout|Handshake timeout)\b`)
	benignLibCalls = []string{
		// The connection is closing or draining after a CONNECTION_CLOSE:
		// how every connection ends, not an error.
		"ERR_DRAINING", "ERR_CLOSING",
	}
)

// h3NoError is HTTP/3's H3_NO_ERROR, the code of a clean application close
// and of STOP_SENDING from a server that has answered a request without
// reading all of it (RFC 9114, Sections 4.1 and 8.1).
const h3NoError = 0x100

// ngtcp2Problems returns the lines of an ngtcp2 example program's output
// (gtlsclient, gtlsserver) that report an error, in order.
func ngtcp2Problems(out string) []string {
	var bad []string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if lineIsProblem(line) {
			bad = append(bad, line)
		}
	}
	return bad
}

func lineIsProblem(line string) bool {
	if libCallFailed.MatchString(line) {
		for _, b := range benignLibCalls {
			if strings.HasSuffix(line, b) {
				return false
			}
		}
		return true
	}
	if setupFailed.MatchString(line) {
		return true
	}
	if m := streamClosed.FindStringSubmatch(line); m != nil {
		code, err := strconv.ParseUint(m[1], 10, 64)
		return err != nil || code != h3NoError
	}
	if m := closeReceived.FindStringSubmatch(line); m != nil {
		code, err := strconv.ParseUint(m[2], 16, 64)
		if err != nil {
			return true
		}
		if m[1] == "1c" { // transport close: only NO_ERROR is clean
			return code != 0
		}
		return code != h3NoError && code != 0
	}
	return false
}
