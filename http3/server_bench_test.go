package http3

import (
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// benchFileHandler serves a 1 KB file with http.FileServer.
func benchFileHandler(b *testing.B) http.Handler {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "1k.bin"), make([]byte, 1<<10), 0o600); err != nil {
		b.Fatal(err)
	}
	return http.FileServer(http.Dir(dir))
}

// benchGets measures GET requests for /1k.bin with our client. With
// oneConn every goroutine shares one Transport (one QUIC connection);
// otherwise each goroutine has its own connection.
func benchGets(b *testing.B, addr string, clientTLS *tls.Config, oneConn bool) {
	url := "https://" + addr + "/1k.bin"
	shared := &Transport{TLSClientConfig: clientTLS}
	defer shared.Close()
	b.SetParallelism(8) // 16 goroutines on 2 cores: requests overlap
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		tr := shared
		if !oneConn {
			tr = &Transport{TLSClientConfig: clientTLS}
			defer tr.Close()
		}
		c := &http.Client{Transport: tr}
		for pb.Next() {
			rsp, err := c.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			n, err := io.Copy(io.Discard, rsp.Body)
			rsp.Body.Close()
			if err != nil || n != 1<<10 {
				b.Errorf("read %d bytes: %v", n, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkFile1KB: our server, our client.
func BenchmarkFile1KB(b *testing.B) {
	_, addr, clientTLS := startServer(b, benchFileHandler(b))
	b.Run("server=ours/conns=one", func(b *testing.B) { benchGets(b, addr, clientTLS, true) })
	b.Run("server=ours/conns=many", func(b *testing.B) { benchGets(b, addr, clientTLS, false) })
}
