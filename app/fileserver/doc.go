// Package fileserver is the shell of "turboretry serve": a static file
// server with its certificate, root secret, access log and metrics.
//
// A Server owns the HTTP handler, the TLS configuration (with a certificate
// that SIGHUP can replace), the token key ring, the logger and the metrics
// registry. It serves HTTPS over TCP (HTTP/1.1 and HTTP/2) itself and runs
// any number of extra listeners beside it. New adds one of those itself,
// the HTTP/3 listener (http3.go): it serves Handler over QUIC on the UDP
// port of the same number, with the --retry policy, the root secret and,
// with --offload xdp, the XDP address-validation agent in front.
package fileserver
