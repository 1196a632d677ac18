package proxy

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/turboretry/turboretry/app/fileserver"
)

// EarlyDataPolicy says what becomes of a request that is not idempotent
// and arrived in TLS early data (HTTP/3 0-RTT), which an attacker may have
// replayed (RFC 8470). Idempotent requests in early data are forwarded at
// once with "Early-Data: 1", so the upstream can answer 425 itself.
type EarlyDataPolicy int

const (
	// EarlyDataReject answers 425 (Too Early): the client repeats the
	// request once its handshake completed.
	EarlyDataReject EarlyDataPolicy = iota
	// EarlyDataHold waits for the handshake to complete (which a replay
	// cannot do) and forwards the request then, as not early. The wait
	// needs the connection's fileserver.ConnInfo (the file server's
	// HTTP/3 listener sets it); without it the request gets 425.
	EarlyDataHold
)

// ParseEarlyDataPolicy parses serve's --early-data value: "reject" (or
// "425") or "hold".
func ParseEarlyDataPolicy(s string) (EarlyDataPolicy, error) {
	switch s {
	case "reject", "425":
		return EarlyDataReject, nil
	case "hold":
		return EarlyDataHold, nil
	}
	return 0, fmt.Errorf("early data policy %q: want reject or hold", s)
}

func (p EarlyDataPolicy) String() string {
	if p == EarlyDataHold {
		return "hold"
	}
	return "reject"
}

// Early-data outcomes: the label of turboretry_proxy_early_data_total.
const (
	earlyForwarded = "forwarded" // idempotent: forwarded with Early-Data: 1
	earlyRejected  = "rejected"  // answered 425
	earlyHeld      = "held"      // forwarded after the handshake completed
)

// inEarlyData reports whether r arrived before its connection's handshake
// completed: as with quic-go's server, r.TLS.HandshakeComplete is false
// for a request in 0-RTT. TCP requests never are (net/http does not
// accept early data).
func inEarlyData(r *http.Request) bool {
	return r.TLS != nil && !r.TLS.HandshakeComplete
}

// isIdempotent reports whether a request with method may be repeated
// without a different effect (RFC 9110 section 9.2.2).
func isIdempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// admitEarly decides on a request in early data. It reports whether the
// request goes on, and whether it still counts as early (forwarded before
// the handshake completed); when it does not go on, the request was
// answered.
func (h *Handler) admitEarly(w http.ResponseWriter, r *http.Request) (proceed, early bool) {
	if isIdempotent(r.Method) {
		h.m.earlyData.WithLabelValues(earlyForwarded).Inc()
		return true, true
	}
	if h.cfg.EarlyData == EarlyDataHold {
		// The handshake ends within the server's handshake timeout, or
		// the connection (and the request's context) does.
		if done := fileserver.ConnInfoFromContext(r.Context()).HandshakeComplete; done != nil {
			select {
			case <-done:
				h.m.earlyData.WithLabelValues(earlyHeld).Inc()
				return true, false
			case <-r.Context().Done():
				return false, false
			}
		}
	}
	h.m.earlyData.WithLabelValues(earlyRejected).Inc()
	fileserver.AddAccessLogAttrs(w, slog.String("upstream_error", kindTooEarly))
	http.Error(w, "too early: repeat the request after the handshake", http.StatusTooEarly)
	return false, false
}
