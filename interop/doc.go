// Package interop runs TurboRetry's HTTP/3 client and server against
// independent implementations: ngtcp2's example client and server
// (gtlsclient, gtlsserver, Debian packages ngtcp2-client and
// ngtcp2-server) and headless Chromium (Debian package chromium).
//
// The tests live in this package and skip, saying which binary is missing,
// when a peer is not installed; CI installs them. The non-test code is the
// small harness they share: StartServer runs our file server in-process
// with its JSON log captured and returns once fileserver.Server.HTTP3Ready
// says it serves, ParseAccessLog reads that log back, and
// ngtcp2Problems picks error lines out of ngtcp2's output.
package interop
