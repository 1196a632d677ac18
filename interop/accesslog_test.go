package interop

import (
	"strings"
	"testing"
)

func TestParseAccessLog(t *testing.T) {
	log := `{"time":"2026-11-29T21:28:22Z","level":"INFO","msg":"serving HTTP/3","udp":"127.0.0.1:4433"}
{"time":"2026-11-29T21:28:23Z","level":"INFO","msg":"request","method":"GET","path":"/","status":200,"bytes":1892,"protocol":"HTTP/3.0","duration":8346726,"remote":"127.0.0.1:39446","retry_validated":true,"token_validated":false,"zero_rtt":false}

{"time":"2026-11-29T21:28:24Z","level":"INFO","msg":"request","method":"HEAD","path":"/x","status":404,"bytes":0,"protocol":"HTTP/2.0","duration":1,"remote":"127.0.0.1:1","retry_validated":false,"token_validated":true,"zero_rtt":true}
`
	recs, err := ParseAccessLog([]byte(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []AccessRecord{
		{Method: "GET", Path: "/", Status: 200, Bytes: 1892, Protocol: "HTTP/3.0", Remote: "127.0.0.1:39446", RetryValidated: true},
		{Method: "HEAD", Path: "/x", Status: 404, Protocol: "HTTP/2.0", Remote: "127.0.0.1:1", TokenValidated: true, ZeroRTT: true},
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d: got %+v, want %+v", i, recs[i], want[i])
		}
	}
}

func TestParseAccessLogRejectsNonJSON(t *testing.T) {
	for _, log := range []string{
		"time=2026 level=INFO msg=request path=/\n",                     // text handler
		`{"msg":"request","status":"200"}` + "\n",                       // wrong type
		`{"msg":"request"` + "\n",                                       // truncated
		`{"msg":"x"}` + "\n" + strings.Repeat("a", maxLogLine+1) + "\n", // line too long
	} {
		if recs, err := ParseAccessLog([]byte(log)); err == nil {
			t.Errorf("ParseAccessLog(%.60q) = %+v, want an error", log, recs)
		}
	}
}
