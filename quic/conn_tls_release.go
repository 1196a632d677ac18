package quic

import (
	"crypto/tls"
	"fmt"
)

// A server has no use for crypto/tls once the handshake is complete and its
// session ticket is out: 1-RTT keys and key updates are ours, and a client
// sends no post-handshake message that a server accepts. The QUICConn holds
// several KiB per connection (the ClientHello buffer, record-layer ciphers
// for every level, a clone of the tls.Config), so releaseTLS lets it go and
// keeps only what is still asked for: the ConnectionState and the answer to
// any post-handshake CRYPTO data.

// maxTLSHandshakeMessage is crypto/tls's bound on a handshake message.
const maxTLSHandshakeMessage = 65536

// postHandshakeCrypto answers 1-RTT CRYPTO data a client sends after the
// server released crypto/tls, as crypto/tls would: a complete message is
// unexpected (unexpected_message), an oversized one an internal_error; the
// bytes of a message still in flight are counted, not kept.
type postHandshakeCrypto struct {
	header    [4]byte // type (1 byte) and length (3 bytes)
	headerLen int
	remaining int // body bytes of the current message not yet received
}

// handle takes the next in-order bytes; the error, wrapping a
// tls.AlertError, closes the connection.
func (p *postHandshakeCrypto) handle(d []byte) error {
	for len(d) > 0 {
		if p.headerLen < len(p.header) {
			n := copy(p.header[p.headerLen:], d)
			p.headerLen += n
			d = d[n:]
			if p.headerLen < len(p.header) {
				return nil
			}
			p.remaining = int(p.header[1])<<16 | int(p.header[2])<<8 | int(p.header[3])
			if p.remaining > maxTLSHandshakeMessage {
				return fmt.Errorf("tls: handshake message of length %d bytes exceeds maximum of %d bytes%.0w",
					p.remaining, maxTLSHandshakeMessage, tls.AlertError(80))
			}
		}
		n := min(p.remaining, len(d))
		p.remaining -= n
		d = d[n:]
		if p.remaining == 0 {
			return fmt.Errorf("tls: unexpected post-handshake message of type %d from the client%.0w",
				p.header[0], tls.AlertError(10))
		}
	}
	return nil
}

// releaseTLS lets a server's crypto/tls state go once the handshake is
// complete and no TLS event is pending, keeping the ConnectionState.
func (hs *handshakeState) releaseTLS() {
	if hs.tls == nil || !hs.complete {
		return
	}
	hs.dropTLS()
}

// abandon ends a handshake still in progress when the connection closes.
// A crypto/tls client that was resuming then removes the session ticket
// from the ClientSessionCache. That happens now, before CloseWithError
// returns (quic-go does the same), and not at teardown after the closing
// period. By then a connection dialed in the meantime may have stored a
// fresh ticket under the same key, and the late removal would delete it.
func (hs *handshakeState) abandon() {
	if hs.tls == nil || hs.complete {
		return
	}
	hs.dropTLS()
}

// dropTLS closes crypto/tls and keeps its ConnectionState.
func (hs *handshakeState) dropTLS() {
	state := hs.tls.ConnectionState()
	hs.tlsState = &state
	hs.tls.Close()
	hs.tls = nil
	hs.postHandshake = new(postHandshakeCrypto)
}

// started reports whether the handshake started (the connection has keys
// to send with), whether or not crypto/tls is still held.
func (hs *handshakeState) started() bool { return hs.tls != nil || hs.tlsState != nil }

// tlsConnectionState is the TLS state for ConnectionState.
func (hs *handshakeState) tlsConnectionState() tls.ConnectionState {
	if hs.tls != nil {
		return hs.tls.ConnectionState()
	}
	if hs.tlsState != nil {
		return *hs.tlsState
	}
	return tls.ConnectionState{}
}

// handleCryptoData hands in-order CRYPTO data of space to crypto/tls, or,
// once released, to the post-handshake answer.
func (hs *handshakeState) handleCryptoData(space int, d []byte) error {
	if hs.tls == nil {
		if hs.postHandshake == nil {
			return fmt.Errorf("tls: CRYPTO data before the handshake started%.0w", tls.AlertError(80))
		}
		return hs.postHandshake.handle(d)
	}
	return hs.tls.HandleData(tlsLevel(space), d)
}
