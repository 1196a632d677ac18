package quic

import "time"

// handshakeTiming times the handshake for ConnectionStats.HandshakeDuration
// (the app tier's handshake duration histogram).
type handshakeTiming struct {
	started           time.Time // when the connection was created
	handshakeDuration time.Duration
}

func (h *handshakeTiming) noteHandshakeComplete(now time.Time) {
	h.handshakeDuration = now.Sub(h.started)
}
