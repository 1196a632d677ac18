package interop

import (
	"strings"
	"testing"
)

// FuzzParseAccessLog checks that any log text gives records or an error,
// never a panic, and at most one record per line.
func FuzzParseAccessLog(f *testing.F) {
	f.Add([]byte(`{"msg":"request","method":"GET","path":"/","status":200,"bytes":5,"protocol":"HTTP/3.0","retry_validated":true}` + "\n"))
	f.Add([]byte(`{"msg":"serving HTTP/3","udp":"127.0.0.1:1"}` + "\n\n"))
	f.Add([]byte("time=1 msg=request\n"))
	f.Add([]byte(`{"msg":"request","status":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseAccessLog(data)
		if err != nil {
			return
		}
		if n := strings.Count(string(data), "\n") + 1; len(recs) > n {
			t.Errorf("%d records from %d lines", len(recs), n)
		}
	})
}

// FuzzNgtcp2Problems checks that the scanner never panics and returns only
// lines of its input.
func FuzzNgtcp2Problems(f *testing.F) {
	f.Add("ngtcp2_conn_read_pkt: ERR_DRAINING\nHTTP stream 0 closed with error code 256\n")
	f.Add("HTTP stream 0 closed with error code 99999999999999999999999\n")
	f.Add("I0 0x1 frm rx 1 1RTT CONNECTION_CLOSE(0x1c) error_code=X(0xffffffffffffffffff)\r\n")
	f.Add("Could not bind\n")
	f.Fuzz(func(t *testing.T, out string) {
		for _, line := range ngtcp2Problems(out) {
			if !strings.Contains(out, line) {
				t.Errorf("reported %q, which is not in the input", line)
			}
		}
	})
}
