// Package http3 implements HTTP/3 (RFC 9114) on top of the TurboRetry QUIC
// transport: a Server, a client Transport (an http.RoundTripper), and the
// layers below them.
//
// The framing layer is transport independent: the frame codec and a
// streaming frame reader (RFC 9114 section 7), SETTINGS (section 7.2.4,
// RFC 9204 section 5, RFC 9220, RFC 9297), unidirectional stream types
// (section 6.2), the frame-sequence rules of control and request streams,
// the error codes of section 8.1, and the conversion between net/http
// requests and responses and QPACK field sections (sections 4.2 and 4.3),
// using github.com/quic-go/qpack with the static table only: we advertise a
// dynamic table capacity of 0, so peers never reference a dynamic table.
//
// Server and Transport run it on quic.Conn: each side opens a control
// stream with SETTINGS, checks the peer's control stream and closes the
// connection with the H3 error code of a violation; request and response
// bodies are streamed as DATA frames without buffering whole bodies;
// GOAWAY drains connections gracefully. Both sides use 0-RTT when the
// QUIC and TLS configuration allow it: the server listens with
// quic.ListenEarly, and the Transport sends only safe, bodiless requests
// before the handshake completes.
//
// For WebTransport, MASQUE and similar protocols the package has quic-go's
// extended API: ClientConn (Transport.NewClientConn, RawClientConn) with
// RequestStream, RawServerConn, handlers taking their stream over
// (HTTPStreamer), the peer's SETTINGS (Settingser, AdditionalSettings),
// extended CONNECT (RFC 9220, always enabled on the Server), HTTP
// Datagrams (RFC 9297, EnableDatagrams) and the capsule protocol
// (CapsuleParser, WriteCapsule). Server push is not implemented.
//
// API names follow quic-go's http3 package where both have the concept.
package http3
