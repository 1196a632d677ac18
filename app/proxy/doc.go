// Package proxy is the reverse proxy of "turboretry serve --upstream":
// an http.Handler that forwards requests to HTTP/1.1 or HTTP/2
// applications (http://, https:// and unix: upstreams), with the file
// server's shell (app/fileserver: QUIC listener, Retry policy, limits,
// access log, metrics, graceful shutdown) in front of it.
//
// net/http/httputil.ReverseProxy does the HTTP forwarding: hop-by-hop
// fields, 1xx responses, streaming with flushes, response trailers, and
// http.Transport the upstream connections. This package adds what it
// leaves to its user: choosing an upstream (routes by path prefix, round
// robin, passive health with a failover to another upstream while the
// request is still untouched), the forwarding fields (X-Forwarded-*,
// Forwarded, Via) with a trust list, request trailers, the request body
// limit, error statuses (502, 504, 413) by the kind of failure, the
// access-log fields and the metrics. docs/proxy.md describes it.
package proxy
