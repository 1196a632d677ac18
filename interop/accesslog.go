package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
)

// AccessRecord is one access-log line of the file server (msg "request").
type AccessRecord struct {
	Method         string `json:"method"`
	Path           string `json:"path"`
	Status         int    `json:"status"`
	Bytes          int64  `json:"bytes"`
	Protocol       string `json:"protocol"` // "HTTP/3.0" for HTTP/3
	Remote         string `json:"remote"`
	RetryValidated bool   `json:"retry_validated"`
	TokenValidated bool   `json:"token_validated"`
	ZeroRTT        bool   `json:"zero_rtt"`
}

// maxLogLine bounds one log line; the server's lines are a few hundred
// bytes, so anything longer is not its output.
const maxLogLine = 1 << 20

// ParseAccessLog returns the access records in a JSON log written by
// slog's JSON handler, in order, skipping the server's other events. A
// line that is not a JSON object is an error: the harness logs nothing
// else, so such a line means the log is not what the tests think it is.
func ParseAccessLog(data []byte) ([]AccessRecord, error) {
	var out []AccessRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxLogLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var head struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("log line %d is not a JSON object: %w", n, err)
		}
		if head.Msg != "request" {
			continue
		}
		var r AccessRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("log line %d: bad access record: %w", n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	return out, nil
}
