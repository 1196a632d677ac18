package fileserver

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// withAccessLog logs one line per request and counts it in the metrics.
func withAccessLog(next http.Handler, log *slog.Logger, m *serverMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			// A handler that panics (http.ErrAbortHandler included) is still
			// logged; the panic goes on to net/http, which owns recovery.
			status := sw.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http sends 200
			}
			elapsed := time.Since(start)
			proto := protocolLabel(r.Proto)
			m.requests.WithLabelValues(proto, methodLabel(r.Method), strconv.Itoa(status)).Inc()
			m.respBytes.WithLabelValues(proto).Add(float64(sw.bytes))
			m.duration.WithLabelValues(proto).Observe(elapsed.Seconds())
			ci := ConnInfoFromContext(r.Context())
			attrs := [...]slog.Attr{
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", sw.bytes),
				slog.String("protocol", r.Proto),
				slog.Duration("duration", elapsed),
				slog.String("remote", r.RemoteAddr),
				slog.Bool("retry_validated", ci.RetryValidated),
				slog.Bool("token_validated", ci.TokenValidated),
				slog.Bool("zero_rtt", ci.ZeroRTT),
			}
			if len(sw.extra) == 0 {
				log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs[:]...)
			} else {
				log.LogAttrs(r.Context(), slog.LevelInfo, "request", append(attrs[:], sw.extra...)...)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter records the status code and the body bytes written.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	extra  []slog.Attr // AddAccessLogAttrs's
}

// AddAccessLogAttrs adds attrs to the access log line of the request
// that w answers (the proxy's upstream, upstream_status, upstream_time).
// w is the ResponseWriter a Config.Handler's handler was given, or one
// that wraps it with an Unwrap method (as http.ResponseController
// expects). It reports false, and logs nothing, when w does not lead to
// the access log. Call it from the handler's goroutine, before the
// handler returns.
func AddAccessLogAttrs(w http.ResponseWriter, attrs ...slog.Attr) bool {
	for {
		if sw, ok := w.(*statusWriter); ok {
			sw.extra = append(sw.extra, attrs...)
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code // 1xx are interim; the final status comes later
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom keeps the sendfile path of HTTP/1.1 connections, which
// http.FileServer uses through io.Copy.
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(writerOnly{w.ResponseWriter}, r)
	}
	w.bytes += n
	return n, err
}

// Flush lets streaming handlers flush through the wrapper.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writerOnly hides ReadFrom so that io.Copy does not loop back into it.
type writerOnly struct{ io.Writer }
