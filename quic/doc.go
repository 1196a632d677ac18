// Package quic is TurboRetry's QUIC transport (RFC 9000, RFC 9001, RFC 9002,
// QUIC v2 RFC 9369, DATAGRAM RFC 9221) with an API shaped like quic-go
// v0.65, so programs port by swapping the import paths: quic-go's own
// programs and most of its integration tests run on it (docs/dropin.md);
// docs/api.md lists the remaining differences.
//
// A Transport owns a UDP socket, demultiplexes datagrams by destination
// connection ID and serves one listener and any number of dialed
// connections. ListenAddr, Listen, DialAddr and Dial create a Transport for
// a single use. Each Conn runs one goroutine that processes received
// packets, timers (loss detection and PTO, ACK delay, idle and handshake
// timeouts, pacing, key discard) and sends; streams block on their own
// condition signals with deadlines. The goroutine exits when the
// connection has had nothing to do for a while (parkAfter) and is started
// again by the next datagram, API call or timer (conn_park.go), so an
// idle connection holds no goroutine stack.
//
// # Locking
//
// No callback into application code runs while a lock of this package is
// held (a connection's, its streams', a Transport's, a listener's): each
// may call any method of its connection, Transport or listener.
// Callbacks that state changes under a connection's lock call for
// (AllowConnectionWindowIncrease, TokenStore.Put, Tracer recorders,
// ConnectionIDAdded, final-size callbacks) are queued and made by the
// connection's goroutine once it released the lock (Qlog writers are
// written by their trace's own goroutine, from those recorders' events),
// and the IDs of a ConnectionIDGenerator are made ahead without it;
// WriteWithLimit's limiter runs on the writing goroutine; the AllowConnectionWindowIncrease question
// goes to a goroutine of its own, so the callback may even close the
// connection. The exception, run under the connection's lock, is
// crypto/tls's callbacks during the handshake (GetCertificate,
// VerifyPeerCertificate, ...): they must not call the connection.
// docs/api.md "Callbacks" lists every hook with where it runs.
//
// The locks nest in one order, so no two goroutines can wait on each
// other. Each entry says what the lock guards and which locks may be
// taken while it is held; no other nesting occurs, and these form no
// cycle. Leaves take no other lock.
//
//   - Conn.mu: the connection's state, its streams' and paths' included.
//     Taken holding no other lock, never two connections' at once. Under
//     it: Conn.inbox.mu, baseServer.mu, tokenValidator.mu, Transport.mu
//     (its own Transport's and its paths'), sendBudget.mu and
//     connid.Generator.mu.
//   - tokenValidator.mu (address_validator.go): the token issuers, the
//     validator and their scratch. Under it: the token package's KeyRing,
//     KeyCache and ReplayFilter locks, which are leaves.
//   - baseServer.mu (the listener's): its load, the admission by prefix,
//     the connections not accepted yet. Leaf.
//   - Transport.mu: the routing tables (handlers, resetTokens), the
//     listener, the closed state. Leaf: the read loop finds a connection
//     under it and hands it the datagram after releasing it, and a
//     connection shed for memory is picked by its atomic counters.
//   - Conn.inbox.mu: the datagrams queued for the connection. Leaf; the
//     read loop queues without Conn.mu, so a busy connection never stalls
//     it.
//   - sendBudget.mu (writers waiting for MaxSendBuffer), earlyQueue.mu
//     (0-RTT datagrams ahead of their Initial), transportTracer.mu (the
//     RecordEvent calls in progress), lruTokenStore.mu,
//     refusalCloses.mu (the refusal closes sent last) and
//     connid.Generator.mu: leaves.
//
// Transport.Close wakes the parked connections, waits for the
// connections' goroutines and its read loop, so it must not run under any
// of these locks (none does).
//
// # Implemented
//
//   - TLS 1.3 through crypto/tls's QUIC API; a server must offer ALPN
//     (tls.Config.NextProtos, or GetConfigForClient), a mismatch fails the
//     handshake with CRYPTO_ERROR 0x178. Session tickets and resumption
//     (tls.Config.ClientSessionCache).
//   - Initial, Handshake and 1-RTT packet number spaces, coalescing,
//     padding of client Initials and ack-eliciting server Initials to 1200
//     bytes, key discard, HANDSHAKE_DONE, the 3x anti-amplification limit,
//     transport parameter authentication (original/initial/retry source
//     connection IDs), client-side Retry, Version Negotiation (the client
//     starts over in a version the server offers, or fails with
//     VersionNegotiationError; a reserved version first in Config.Versions
//     elicits it), QUIC v1 and v2 with compatible version negotiation
//     (RFC 9368: the version_information parameter, the server moving a
//     client to the version it prefers in its first flight, and the
//     downgrade checks of both sides). A server creates connection state
//     only for an Initial that decrypts.
//   - Batched UDP I/O on a *net.UDPConn (internal/udpio): recvmmsg and
//     sendmmsg, UDP GSO and GRO where the kernel has them, large socket
//     buffers.
//   - Loss detection, PTO (backoff capped at 60 s), congestion control
//     (CUBIC by default, NewReno through Config.CongestionControl; both
//     end the first slow start with HyStart++ and start with a window of
//     32 datagrams) and pacing (internal/recovery, internal/congestion); 1-RTT
//     packet numbers skipped at random to catch optimistic ACKs (RFC 9000
//     section 21.4, PROTOCOL_VIOLATION); flow control with window
//     auto-tuning and stream limits (internal/flowcontrol).
//   - Bidirectional and unidirectional streams with FIN, RESET_STREAM,
//     STOP_SENDING and deadlines; resets with partial delivery
//     (RESET_STREAM_AT, draft-ietf-quic-reliable-stream-reset:
//     Config.EnableStreamResetPartialDelivery, SetReliableBoundary);
//     DATAGRAM frames; 1-RTT key updates
//     (initiated at the AEAD confidentiality limit or on request, accepted
//     from the peer unless it updates again before it can have seen our
//     acknowledgment, KEY_UPDATE_ERROR; Conn.InitiateKeyUpdate); idle
//     timeout and keep-alives;
//     stateless resets (sent for unknown
//     connection IDs when Transport.StatelessResetKey is set, detected
//     through the peer's tokens);
//     connection IDs (internal/connid): each side issues NEW_CONNECTION_ID
//     up to the peer's active_connection_id_limit (capped at 4), handles
//     RETIRE_CONNECTION_ID with a replacement, stores the peer's IDs
//     (limit 4), honours retire_prior_to, and every issued ID is routed
//     through the Transport (ConnectionIDAdded).
//   - Path validation and the server's side of connection migration (RFC
//     9000 sections 8.2 and 9): PATH_CHALLENGE answered on its own path, a
//     server follows a client to a new address (active migration or NAT
//     rebinding) after the handshake is confirmed, validates it within the
//     3x amplification limit, moves to a fresh peer connection ID, restarts
//     RTT and congestion state for a new host, and falls back to the last
//     validated address when validation fails. A client migrates with
//     AddPath, Path.Probe and Path.Switch, as in quic-go. A server's
//     preferred address (RFC 9000 section 9.6, Config.PreferredAddress)
//     with its connection ID and reset token; a client moves there after
//     the handshake with Config.MigrateToPreferredAddress. A server on a
//     socket bound to the unspecified address answers from the address the
//     client sent to (IP_PKTINFO).
//   - Path MTU discovery (RFC 9000 section 14.3, RFC 8899): after handshake
//     confirmation, padded PING probes raise datagrams from 1200 up to 1452
//     bytes on sockets with the don't-fragment bit; a lost probe is no
//     congestion signal, PTO probes go at 1200 bytes, and a path that loses
//     every large datagram falls back to 1200 (Config.DisablePathMTUDiscovery
//     turns it off).
//   - ECN (RFC 9000 section 13.4, RFC 9002 section 7.1): datagrams are
//     marked ECT(0) on sockets that report received codepoints; ACK_ECN
//     frames carry our counts; the peer's counts validate our marks (a
//     path that bleaches or drops them ends the marking) and CE marks are
//     congestion events (Config.DisableECN turns it off).
//   - Server-side address validation (Transport.AddressValidation, see
//     docs/address-validation.md): an AddressPolicy hook decides accept,
//     Retry or drop for every client Initial, with the token's validation
//     result and the server load; AlwaysRetry, NeverRetry, AutoRetry and
//     VerifySourceAddress ship. Retries carry TurboRetry universal tokens;
//     retry tokens from an offload agent are revalidated and accepted, their
//     ODCID and RSCID going into the transport parameters (the host
//     cooperator); bad retry tokens get INVALID_TOKEN. Servers send
//     NEW_TOKEN tokens, clients keep them in Config.TokenStore
//     (NewLRUTokenStore).
//   - 0-RTT (RFC 9001 section 4.6): a server with Config.Allow0RTT issues
//     tickets that allow early data, remembering its limits in them, and
//     reads 0-RTT packets with the early keys (an EarlyListener hands out
//     the connection before the handshake completes); a client with a
//     tls.Config.ClientSessionCache remembers the server's limits with each
//     ticket, and DialAddrEarly/DialEarly return at once when resuming one
//     that allows early data, sending streams in 0-RTT. If the server
//     rejects early data, as in quic-go, the early streams fail with
//     Err0RTTRejected until NextConnection.
//   - qlog: a connection records quic-go's qlog events (package qlog:
//     states, parameters, packets with their frames, losses, metrics, MTU
//     and key updates, tuples, the close) into the qlogwriter.Trace that
//     Config.Tracer returns (qlog.DefaultConnectionTracer writes
//     $QLOGDIR). Config.Qlog asks for a writer per connection instead
//     (QlogDir writes <dir>/<odcid>_<client|server>.sqlog) and gets the
//     same events through a qlogwriter.FileSeq. Off (both nil) it costs
//     one nil check per hook.
//   - Limits and memory budgets (docs/api.md "Limits"): a listener's
//     connections, handshakes and accept backlog are capped
//     (Config.MaxConnections, MaxHandshakes, AcceptBacklog), a client beyond
//     them refused statelessly before any state exists; with
//     Config.Admission each client source prefix is held to a fair share
//     of them under pressure and to a rate of new connections, and part
//     of them is kept for returning clients (a valid NEW_TOKEN token),
//     against botnets whose real addresses pass Retry; a stream's writer
//     queues only what the peer's flow control allows, a connection
//     and a Transport hold bounded send data (Config.MaxConnectionSendBuffer,
//     Transport.MaxSendBuffer), receive windows stop growing past
//     Transport.MaxReceiveBuffer, and received data costs memory in
//     proportion to its bytes, however scattered, bounded per connection
//     (Config.MaxReceiveFragments, MaxOutOfOrderReceiveBytes) and per
//     Transport (MaxReceiveMemory closes the worst offender).
//     Transport.Stats reports the load and every refusal, drop, closure
//     for memory and recovered panic by reason.
//
// # Not implemented yet
//
//   - Switching a client back to its original socket; a preferred address
//     on another socket or port than the listener's.
package quic
