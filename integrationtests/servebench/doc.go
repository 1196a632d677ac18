// Package servebench measures what serving costs: `turboretry serve` with its
// default flags against quic-go's http3.Server with net/http's file server
// (the same files, certificate and client), over HTTP/3 and over HTTPS/TCP
// on loopback. Each server runs in its own process, so its CPU time (from
// /proc) and its resident memory are its own; the client is quic-go's
// HTTP/3 client, or net/http's for TCP, in the benchmark process.
//
// The package is tests and benchmarks only (quic-go may be linked into tests
// only); `make bench-serve` runs it with A/B alternation and benchstat, and
// docs/performance.md ("Serving cost") has the figures and the command.
//
// BenchmarkProxy compares reverse proxies in the same way: `turboretry serve
// --upstream`, Caddy's reverse_proxy (when caddy is installed) and quic-go's
// http3.Server with httputil.ReverseProxy, in front of one net/http upstream
// (`make bench-proxy`; docs/proxy.md, "Benchmark").
package servebench
