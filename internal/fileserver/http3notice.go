package fileserver

import "log/slog"

// logHTTP3Pending says that this build does not serve HTTP/3 yet, although
// responses advertise it with Alt-Svc (browsers then keep using TCP). It is
// the only place that says so: the HTTP/3 integration deletes this file and
// its one call in Server.announce.
func logHTTP3Pending(log *slog.Logger) {
	log.Info("HTTP/3 is not served yet by this build: the QUIC listener is still being written; HTTPS over TCP (HTTP/1.1 and HTTP/2) only")
}
