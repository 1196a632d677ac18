package http3

import (
	"context"
	"sync"

	"github.com/turboretry/turboretry/quic"
)

// peerState is what both sides of a connection keep about the peer's
// control stream: its SETTINGS (RFC 9114 section 7.2.4) and, once both
// sides enabled them, the HTTP Datagrams that arrive for request streams
// (RFC 9297).
type peerState struct {
	qc *quic.Conn
	// datagrams: we sent SETTINGS_H3_DATAGRAM=1, so the peer may send
	// HTTP Datagrams once it sent the same.
	datagrams bool
	// fail closes the connection with the H3 error of err.
	fail func(err error)
	// qlog records the HTTP Datagrams sent and received, and the frames
	// of the request streams (Stream).
	qlog *qlogProducer

	mu          sync.Mutex
	settings    settings
	public      *Settings     // built on first use from settings
	gotSettings chan struct{} // closed when the SETTINGS frame arrived

	streams streamDatagramsMap
}

func newPeerState(qc *quic.Conn, datagrams bool, fail func(error)) *peerState {
	return &peerState{qc: qc, datagrams: datagrams, fail: fail, gotSettings: make(chan struct{})}
}

// localDatagrams reports whether HTTP Datagrams can be enabled on qc
// when the application asks for them: RFC 9297 section 2.1.1 allows
// SETTINGS_H3_DATAGRAM only with the QUIC max_datagram_frame_size
// transport parameter, which Config.EnableDatagrams sends.
func localDatagrams(qc *quic.Conn, want bool) bool {
	return want && qc.ConnectionState().SupportsDatagrams.Local
}

// onSettings records the peer's SETTINGS and starts reading HTTP
// Datagrams when both sides enabled them.
func (p *peerState) onSettings(s settings) {
	p.mu.Lock()
	p.settings = s
	p.mu.Unlock()
	close(p.gotSettings)
	if !s.H3Datagram || !p.datagrams {
		return
	}
	if !p.qc.ConnectionState().SupportsDatagrams.Remote {
		// Section 2.1.1: SETTINGS_H3_DATAGRAM without QUIC DATAGRAM
		// support.
		p.fail(newError(ErrCodeSettingsError, "SETTINGS_H3_DATAGRAM without the max_datagram_frame_size transport parameter"))
		return
	}
	go p.receiveDatagrams()
}

// ReceivedSettings implements Settingser.
func (p *peerState) ReceivedSettings() <-chan struct{} { return p.gotSettings }

// Settings implements Settingser: nil until the peer's SETTINGS arrived.
// The same value is returned every time.
func (p *peerState) Settings() *Settings {
	select {
	case <-p.gotSettings:
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.public == nil {
		p.public = p.settings.public()
	}
	return p.public
}

// peerDatagrams reports whether the peer's SETTINGS arrived, and if so
// whether they enabled HTTP Datagrams.
func (p *peerState) peerDatagrams() (known, enabled bool) {
	select {
	case <-p.gotSettings:
	default:
		return false, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return true, p.settings.H3Datagram
}

// waitSettings waits for the peer's SETTINGS, for ctx or for the
// connection to close.
func (p *peerState) waitSettings(ctx context.Context) error {
	select {
	case <-p.gotSettings:
		return nil
	default:
	}
	select {
	case <-p.gotSettings:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.qc.Context().Done():
		return fromQUICError(context.Cause(p.qc.Context()))
	}
}
