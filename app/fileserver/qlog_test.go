package fileserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQlogDir: with QlogDir set, an HTTP/3 request leaves a server-side
// qlog of its connection there, with its QUIC and HTTP/3 events.
func TestQlogDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qlog")
	ts := startServer(t, func(c *Config) { c.QlogDir = dir })
	tr := ts.h3Transport()
	ts.h3Fetch(t, tr, "")
	tr.Close()
	var body string
	eventually(t, func() error {
		files, _ := filepath.Glob(filepath.Join(dir, "*_server.sqlog"))
		if len(files) != 1 {
			return errorf("%d server qlog files in %s, want 1", len(files), dir)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			return err
		}
		body = string(b)
		if !strings.Contains(body, `"transport:connection_closed"`) || !strings.HasSuffix(body, "\n") {
			return errorf("the qlog is not complete yet")
		}
		return nil
	})
	for _, want := range []string{`"vantage_point":{"type":"server"}`, `"transport:packet_received"`, `"transport:packet_sent"`,
		// The HTTP/3 layer records into the same trace (Conn.QlogTrace).
		`"http3:frame_parsed"`, `"http3:frame_created"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the qlog lacks %s", want)
		}
	}
	// JSON-SEQ: every record starts with RS, ends with a newline and is
	// one JSON object.
	if !strings.HasPrefix(body, "\x1e") {
		t.Fatalf("the qlog does not start with a record separator: %.20q", body)
	}
	for i, rec := range strings.Split(body[1:], "\x1e") {
		var v map[string]any
		if !strings.HasSuffix(rec, "\n") || json.Unmarshal([]byte(rec), &v) != nil {
			t.Fatalf("record %d is not one JSON object and a newline: %q", i, rec)
		}
	}
}
