package http3

import (
	"bytes"
	"crypto/tls"
)

// 0-RTT and SETTINGS (RFC 9114 section 7.2.4.2): a client that sends
// requests in 0-RTT uses the server settings it remembers from the
// session until the server's SETTINGS arrive, so a server may accept
// early data only if its settings still allow everything the remembered
// ones did (the HTTP/3 side of RFC 9000 section 7.4.1, which the QUIC
// layer applies to its transport parameters). A Server's listeners put
// its SETTINGS into each session ticket (tls.SessionState.Extra, behind
// ticketSettingsTag) and, resuming one, refuse early data when the
// ticket has none or the settings now are stricter; the handshake then
// goes on without 0-RTT (the client sees quic.Err0RTTRejected).

// ticketSettingsTag marks our entry in a SessionState's Extra, which the
// QUIC layer and the application's WrapSession add entries to as well.
var ticketSettingsTag = []byte("turboretry h3 settings v1")

// ticketSettings returns the TLS config adjustment of configureTLS that
// stores ours in session tickets and checks them on resumption, around
// the application's WrapSession and UnwrapSession, if any.
func ticketSettings(ours settings) func(*tls.Config) {
	frame := ours.append(nil)
	extra := append(bytes.Clone(ticketSettingsTag), frame[len(frame)-int(ours.payloadLen()):]...)
	return func(c *tls.Config) {
		wrap := c.WrapSession
		if wrap == nil {
			wrap = c.EncryptTicket
		}
		c.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
			ss.Extra = append(ss.Extra, extra)
			return wrap(cs, ss)
		}
		unwrap := c.UnwrapSession
		if unwrap == nil {
			unwrap = c.DecryptTicket
		}
		c.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
			ss, err := unwrap(identity, cs)
			if err == nil && ss != nil && ss.EarlyData && !earlyDataAllowed(ss.Extra, ours) {
				ss.EarlyData = false
			}
			return ss, err
		}
	}
}

// earlyDataAllowed reports whether the settings remembered in a ticket's
// extra data let a client's 0-RTT requests through under ours.
func earlyDataAllowed(extra [][]byte, ours settings) bool {
	for _, e := range extra {
		p, ok := bytes.CutPrefix(e, ticketSettingsTag)
		if !ok {
			continue
		}
		old, err := parseSettings(p)
		return err == nil && settingsCompatible(old, ours)
	}
	return false // no remembered settings: nothing says what the client assumes
}

// settingsCompatible reports whether settings now do not reduce a limit
// or withdraw a feature of old. Settings this package does not interpret
// may mean anything: they must not have changed at all.
func settingsCompatible(old, now settings) bool {
	switch {
	case now.HasMaxFieldSectionSize && (!old.HasMaxFieldSectionSize || now.MaxFieldSectionSize < old.MaxFieldSectionSize):
		return false
	case now.QPACKMaxTableCapacity < old.QPACKMaxTableCapacity, now.QPACKBlockedStreams < old.QPACKBlockedStreams:
		return false
	case old.EnableConnectProtocol && !now.EnableConnectProtocol, old.H3Datagram && !now.H3Datagram:
		return false
	}
	return old.Other == now.Other
}
