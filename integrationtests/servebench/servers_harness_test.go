package servebench

import (
	"testing"
)

// TestServersServeTheSameFiles checks the benchmark's harness: every server
// starts, serves every file byte-complete over HTTP/3 and HTTPS/TCP, and
// reports CPU time and memory from /proc.
func TestServersServeTheSameFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds turboretry and starts three server processes")
	}
	for _, kind := range serverKinds {
		t.Run(kind, func(t *testing.T) {
			s := startServer(t, kind)
			for _, proto := range []string{"h3", "tcp"} {
				c := newClient(proto)
				for _, name := range []string{smallFile, largeFile} {
					if err := fetchOnce(c, s.url(name), fileSizes[name]); err != nil {
						t.Errorf("%s: %v", proto, err)
					}
				}
				closeClient(c)
			}
			if cpu := s.cpuSeconds(t); cpu <= 0 {
				t.Errorf("server CPU %.2f s after serving 128 MiB", cpu)
			}
			if rss := s.rssBytes(t); rss < 1<<20 {
				t.Errorf("server RSS %.0f bytes", rss)
			}
		})
	}
}
