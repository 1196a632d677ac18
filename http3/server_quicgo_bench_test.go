package http3

import "testing"

// BenchmarkFile1KBQuicGoServer is BenchmarkFile1KB against quic-go's
// HTTP/3 server, with the same (our) client.
func BenchmarkFile1KBQuicGoServer(b *testing.B) {
	addr, clientTLS := startQuicGoServer(b, benchFileHandler(b))
	b.Run("server=quic-go/conns=one", func(b *testing.B) { benchGets(b, addr, clientTLS, true) })
	b.Run("server=quic-go/conns=many", func(b *testing.B) { benchGets(b, addr, clientTLS, false) })
}
