package fileserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/http3"
)

// TestQlogDir: with QlogDir set, an HTTP/3 request leaves a server-side
// qlog of its connection there.
func TestQlogDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qlog")
	ts := startServer(t, func(c *Config) { c.QlogDir = dir })
	tr := &http3.Transport{TLSClientConfig: ts.h3TLS()}
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
		if !strings.Contains(body, `"transport:connection_closed"`) {
			return errorf("the qlog is not complete yet")
		}
		return nil
	})
	for _, want := range []string{`"vantage_point":{"type":"server"}`, `"transport:packet_received"`, `"transport:packet_sent"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the qlog lacks %s", want)
		}
	}
}
