// Package quic is TurboRetry's QUIC transport (RFC 9000, RFC 9001, RFC 9002,
// QUIC v2 RFC 9369, DATAGRAM RFC 9221) with an API shaped like quic-go
// v0.65, so programs port by swapping the import path for the common API.
//
// A Transport owns a UDP socket, demultiplexes datagrams by destination
// connection ID and serves one listener and any number of dialed
// connections. ListenAddr, Listen, DialAddr and Dial create a Transport for
// a single use. Each Conn runs one goroutine that processes received
// packets, timers (loss detection and PTO, ACK delay, idle and handshake
// timeouts, pacing, key discard) and sends; streams block on their own
// condition signals with deadlines.
//
// # Implemented
//
//   - TLS 1.3 through crypto/tls's QUIC API; ALPN is required
//     (tls.Config.NextProtos must be set; a mismatch fails the handshake
//     with CRYPTO_ERROR 0x178). Session tickets and resumption
//     (tls.Config.ClientSessionCache).
//   - Initial, Handshake and 1-RTT packet number spaces, coalescing,
//     padding of client Initials and ack-eliciting server Initials to 1200
//     bytes, key discard, HANDSHAKE_DONE, the 3x anti-amplification limit,
//     transport parameter authentication (original/initial/retry source
//     connection IDs), client-side Retry, Version Negotiation (the client
//     starts over in a version the server offers, or fails with
//     VersionNegotiationError), QUIC v1 and v2. A server creates connection
//     state only for an Initial that decrypts.
//   - Batched UDP I/O on a *net.UDPConn (internal/udpio): recvmmsg and
//     sendmmsg, UDP GSO and GRO where the kernel has them, large socket
//     buffers.
//   - Loss detection, PTO, NewReno congestion control and pacing
//     (internal/recovery, internal/congestion); flow control with window
//     auto-tuning and stream limits (internal/flowcontrol).
//   - Bidirectional and unidirectional streams with FIN, RESET_STREAM,
//     STOP_SENDING and deadlines; DATAGRAM frames; 1-RTT key updates
//     (initiated at the AEAD confidentiality limit, accepted from the peer);
//     idle timeout and keep-alives; stateless resets (sent for unknown
//     connection IDs when Transport.StatelessResetKey is set, detected
//     through the peer's tokens).
//
// # Not implemented yet
//
//   - 0-RTT: Config.Allow0RTT makes Listen and Dial fail with a
//     "not implemented" error; DialAddrEarly and DialEarly wait for the
//     handshake like DialAddr; 0-RTT packets are dropped.
//   - Server-side address validation has no public API yet: every Initial
//     is accepted. Inside, the hook (baseServer.decideInitial) can already
//     drop, answer with a stateless Retry, or accept a token-carrying
//     Initial as validated, with the original and Retry connection IDs
//     taken from the token (the host cooperator); internal/token will plug
//     in there. NEW_TOKEN and Config.TokenStore do not exist yet.
//   - Connection migration and path validation (we answer PATH_CHALLENGE
//     but never probe), issuing NEW_CONNECTION_ID, path MTU discovery
//     (datagrams are 1200 bytes), ECN, compatible version negotiation
//     (RFC 9368) and the version_information parameter, CUBIC selection,
//     qlog.
package quic
