// Package fileserver is the shell of "turboretry serve": a static file
// server with its certificate, root secret, access log and metrics.
//
// A Server owns the HTTP handler, the TLS configuration (with a certificate
// that SIGHUP can replace), the token key ring, the logger and the metrics
// registry. It serves HTTPS over TCP (HTTP/1.1 and HTTP/2) itself and runs
// any number of extra listeners beside it; the HTTP/3 listener will be one
// of those, built from Handler, TLSConfig, KeyRing and Metrics.
package fileserver
