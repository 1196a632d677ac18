package quic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/turboretry/turboretry/internal/congestion"
	"github.com/turboretry/turboretry/internal/recovery"
	"github.com/turboretry/turboretry/qlogwriter"
)

// Config configures a QUIC connection, listener or dial. The zero value (or
// nil) gives the defaults documented on each field.
type Config struct {
	// GetConfigForClient (server), when set, is called for every client
	// Initial that would create a connection, after the listener's limits
	// and address validation let it through; the Config it returns (nil:
	// the listener's) configures that connection. An error refuses the
	// attempt with a stateless CONNECTION_REFUSED. The listener's limits
	// (MaxConnections, MaxHandshakes, AcceptBacklog) stay the listener's.
	// It runs on the Transport's receive goroutine: it must not block.
	GetConfigForClient func(info *ClientInfo) (*Config, error)
	// Versions lists the QUIC versions to speak, preferred first. Default:
	// SupportedVersions() (v1, then v2). A client sends its first Initial
	// in Versions[0] and offers the versions compatible with it (v1 and
	// v2 are) in its version_information transport parameter; after a
	// Version Negotiation packet it starts over in the first of Versions
	// the server lists. A server accepts the versions listed, and moves a
	// client to the first of its Versions that the client offers (RFC 9368
	// compatible version negotiation): with the default a client that
	// starts in v1 stays in v1, with {Version2, Version1} it moves to v2.
	// A client may put a reserved version (0x?a?a?a?a, RFC 9000 section
	// 15) first to elicit Version Negotiation; servers never accept one.
	Versions []Version
	// HandshakeIdleTimeout is how long the handshake may go without
	// receiving a packet before it fails with HandshakeTimeoutError.
	// Default 5 s.
	HandshakeIdleTimeout time.Duration
	// MaxIdleTimeout is the idle timeout advertised to the peer. The
	// connection closes with IdleTimeoutError when no packet arrives
	// within the smaller of both sides' values. Default 30 s.
	MaxIdleTimeout time.Duration
	// InitialStreamReceiveWindow is the initial per-stream receive window.
	// Default 512 KiB.
	InitialStreamReceiveWindow uint64
	// MaxStreamReceiveWindow bounds per-stream window auto-tuning.
	// Default 6 MiB.
	MaxStreamReceiveWindow uint64
	// InitialConnectionReceiveWindow is the initial connection receive
	// window. Default 768 KiB.
	InitialConnectionReceiveWindow uint64
	// MaxConnectionReceiveWindow bounds connection window auto-tuning.
	// Default 15 MiB.
	MaxConnectionReceiveWindow uint64
	// MaxIncomingStreams is how many bidirectional streams the peer may
	// have open at once. Default 100; a negative value allows none.
	MaxIncomingStreams int64
	// MaxIncomingUniStreams is the same for unidirectional streams.
	// Default 100; a negative value allows none.
	MaxIncomingUniStreams int64
	// RequireStreamCreditRelease keeps each stream the peer opened counting
	// against MaxIncomingStreams (MaxIncomingUniStreams) after it
	// completed, until the application calls ReleaseStreamCredit on it.
	RequireStreamCreditRelease bool
	// AllowConnectionWindowIncrease, when set, is asked before the
	// connection's receive window grows by delta bytes (auto-tuning); false
	// keeps it at its size. It runs on a goroutine of its own with no lock
	// of ours held, one call at a time per connection, and not for a
	// connection already closed: it may call any method of conn (unlike quic-go's,
	// where that is not allowed). The window keeps its size until it
	// returns; a MAX_DATA frame sent meanwhile advertises the old size.
	AllowConnectionWindowIncrease func(conn *Conn, delta uint64) bool
	// InitialPacketSize is the datagram size a connection starts with and
	// never goes below (path MTU discovery raises it). Default 1200, the
	// QUIC minimum (quic-go: 1280); values below 1200 are invalid, above
	// 1452 are capped.
	InitialPacketSize uint16
	// KeepAlivePeriod, when positive, sends a PING after that much silence
	// (at most half the idle timeout) so the connection stays alive.
	KeepAlivePeriod time.Duration
	// Allow0RTT lets a server accept 0-RTT data from resuming clients: its
	// session tickets allow early data, and an EarlyListener returns such
	// connections with the early streams readable before the handshake
	// completes. Clients ignore it: they send 0-RTT through DialAddrEarly
	// and DialEarly whenever a resumed ticket allows it.
	Allow0RTT bool
	// EnableDatagrams enables DATAGRAM frames (RFC 9221).
	EnableDatagrams bool
	// EnableStreamResetPartialDelivery advertises the reset_stream_at
	// transport parameter (draft-ietf-quic-reliable-stream-reset): the
	// peer may then reset streams with RESET_STREAM_AT, whose reader still
	// gets the data up to the frame's reliable size before the reset
	// error. Our own resets use RESET_STREAM_AT (SetReliableBoundary)
	// whenever the peer advertised it, as in quic-go.
	EnableStreamResetPartialDelivery bool
	// TokenStore, on a client, keeps the tokens servers send in NEW_TOKEN
	// frames and puts one into the first Initial of the next connection to
	// the same server, which then may skip the Retry round trip. Nil
	// disables this (NewLRUTokenStore makes one).
	TokenStore TokenStore
	// DisablePathMTUDiscovery keeps datagrams at 1200 bytes. Otherwise,
	// on sockets that set the don't-fragment bit, a connection probes for
	// larger datagrams (up to 1452 bytes) once its handshake is confirmed.
	DisablePathMTUDiscovery bool
	// DisableECN stops marking datagrams ECT(0). Otherwise, on sockets
	// that report received ECN codepoints, a connection marks its
	// datagrams, keeps marking only if the peer's ACK frames validate
	// the marks, and treats CE marks as congestion (RFC 9000 13.4).
	DisableECN bool
	// Qlog, when set, is called once per connection, with our perspective
	// and the connection's original destination connection ID, for a
	// writer that receives the connection's qlog: the events a Tracer
	// gets, and its HTTP/3 layer's, written by a
	// qlogwriter.NewConnectionFileSeq (JSON-SEQ); QlogDir writes one file
	// per connection. A nil writer skips that connection. The writer is
	// closed when the trace ends (the connection closed, and any HTTP/3
	// layer's recorders); after a write error nothing more is written
	// (the error is logged), the connection goes on. With Tracer set too,
	// both get every event.
	Qlog func(p Perspective, odcid []byte) io.WriteCloser
	// Tracer, when set, is called once per connection, as in quic-go, with
	// the connection's context, its perspective and its original
	// destination connection ID; the connection records qlog events
	// (package qlog) into the Trace it returns, through one Recorder that
	// it closes when the connection closes. qlog.DefaultConnectionTracer
	// writes them to $QLOGDIR. A nil Trace skips the connection. Events
	// are recorded on the connection's goroutine without any lock of ours
	// held (they are queued and handed over after each of its turns): a
	// Recorder may call the connection, and should not block for long.
	Tracer func(ctx context.Context, isClient bool, connID ConnectionID) qlogwriter.Trace
	// PreferredAddress, on a server, is advertised to clients in the
	// preferred_address transport parameter (RFC 9000 section 9.6) with a
	// connection ID and its stateless reset token. The listener's socket
	// must receive what is sent there: the same port, bound to the
	// unspecified address (on Linux [::] takes both families) or to that
	// address; Listen checks it. Clients ignore it.
	PreferredAddress *PreferredAddress
	// MigrateToPreferredAddress, on a client, moves the connection to the
	// server's preferred address once the handshake is confirmed: it
	// opens a UDP socket of that address's family (trying the family in
	// use first), validates the path with the preferred address's
	// connection ID and switches to it; when validation fails (after
	// three PTOs) the connection stays where it is. Servers ignore it.
	MigrateToPreferredAddress bool

	// MaxConnections (server) bounds the listener's connections at once,
	// in the handshake or established. A client Initial beyond it gets a
	// stateless CONNECTION_REFUSED before any state is created. Default
	// 4096; a negative value means no limit. See docs/api.md "Limits".
	MaxConnections int
	// MaxHandshakes (server) bounds the listener's connections whose
	// handshake is in progress; beyond it a client Initial gets a
	// stateless CONNECTION_REFUSED. Default 256; negative: no limit.
	MaxHandshakes int
	// AcceptBacklog (server) is how many connections may wait for Accept.
	// While that many wait, a client Initial gets a stateless
	// CONNECTION_REFUSED, so no handshake is paid for a connection that
	// would be refused afterwards. Default 128.
	AcceptBacklog int
	// Admission (server), when set, turns on admission by client source
	// prefix (IPv4 /24, IPv6 /56 by default): under pressure each prefix
	// is held to a fair share of MaxHandshakes and MaxConnections, new
	// connections per prefix may be rate limited, and part of the limits
	// is kept for returning clients (a valid NEW_TOKEN token). A client
	// refused gets a stateless CONNECTION_REFUSED at once. Nil: the
	// limits are global only, as in quic-go. See AdmissionConfig and
	// docs/abuse.md.
	Admission *AdmissionConfig
	// MaxConnectionSendBuffer bounds the stream data one connection holds
	// for sending (written, not yet acknowledged) over all its streams; a
	// Write beyond it waits. Each stream also waits once it queued what
	// the peer's flow control allows. Default 16 MiB (above
	// the 15 MiB a peer's connection window may grow to, so the budget
	// never caps one connection's throughput below flow control).
	MaxConnectionSendBuffer uint64
	// MaxReceiveFragments bounds the runs of out-of-order stream data
	// (received beyond a gap) one connection holds over all its streams;
	// beyond it the connection is closed with PROTOCOL_VIOLATION. Each
	// run costs about 64 bytes of bookkeeping besides its data, and an
	// honest peer leaves about one per lost packet in flight. Default
	// 2048; negative: no limit (each stream still allows 1024).
	MaxReceiveFragments int
	// MaxOutOfOrderReceiveBytes bounds the memory one connection's
	// receive buffers hold for out-of-order stream data; beyond it the
	// connection is closed with PROTOCOL_VIOLATION. Default twice
	// MaxConnectionReceiveWindow: an honest peer, whose data costs about
	// its size, never reaches it however much it has in flight.
	MaxOutOfOrderReceiveBytes uint64
	// CongestionControl selects the congestion controller of the
	// connection's sending side (our extension: quic-go has no such
	// field). The zero value is CongestionCubic; both controllers end the
	// first slow start with HyStart++ (RFC 9406) and start with a window
	// of 32 datagrams.
	CongestionControl CongestionControl
}

// CongestionControl names a congestion controller for
// Config.CongestionControl.
type CongestionControl uint8

const (
	// CongestionCubic is CUBIC (RFC 9438), the default.
	CongestionCubic CongestionControl = iota
	// CongestionNewReno is NewReno (RFC 9002 section 7).
	CongestionNewReno
)

// String returns the controller's name.
func (cc CongestionControl) String() string {
	switch cc {
	case CongestionCubic:
		return "cubic"
	case CongestionNewReno:
		return "newreno"
	}
	return fmt.Sprintf("CongestionControl(%d)", uint8(cc))
}

// newController builds the controller cc names for a new path; it is
// recovery.Config's NewController.
func (cc CongestionControl) newController(rtt congestion.RTTSource, maxDatagramSize int) congestion.Controller {
	if cc == CongestionNewReno {
		return congestion.NewNewReno(rtt, maxDatagramSize)
	}
	return congestion.NewCubic(rtt, maxDatagramSize)
}

// recoveryConfig is the loss detector configuration for a connection.
func (c *Config) recoveryConfig(isServer bool) recovery.Config {
	// Until the handshake completes, the handshake idle timeout is in force.
	return recovery.Config{IsServer: isServer, NewController: c.CongestionControl.newController, IdleTimeout: c.HandshakeIdleTimeout}
}

const (
	defaultHandshakeIdleTimeout = 5 * time.Second
	defaultMaxIdleTimeout       = 30 * time.Second
	defaultStreamWindow         = 512 << 10
	defaultMaxStreamWindow      = 6 << 20
	defaultConnWindow           = 768 << 10
	defaultMaxConnWindow        = 15 << 20
	defaultMaxIncomingStreams   = 100
	defaultMaxConnections       = 4096
	defaultMaxHandshakes        = 256
	defaultAcceptBacklog        = 128
	defaultConnSendBuffer       = 16 << 20
)

// Clone returns a copy of c.
func (c *Config) Clone() *Config {
	cc := *c
	cc.Versions = slices.Clone(c.Versions)
	if c.PreferredAddress != nil {
		pa := *c.PreferredAddress
		cc.PreferredAddress = &pa
	}
	if c.Admission != nil {
		ac := *c.Admission
		cc.Admission = &ac
	}
	return &cc
}

// populateConfig validates c and returns a copy with the defaults filled in.
func populateConfig(c *Config) (*Config, error) {
	if c == nil {
		c = &Config{}
	}
	cc := c.Clone()
	if len(cc.Versions) == 0 {
		cc.Versions = SupportedVersions()
	}
	for _, v := range cc.Versions {
		if !v.IsSupported() && !v.IsReserved() {
			return nil, fmt.Errorf("quic: unsupported version %s", v)
		}
	}
	if pa := cc.PreferredAddress; pa != nil {
		if err := pa.validate(); err != nil {
			return nil, err
		}
	}
	if cc.HandshakeIdleTimeout < 0 || cc.MaxIdleTimeout < 0 {
		return nil, errors.New("quic: negative timeout in Config")
	}
	if cc.HandshakeIdleTimeout == 0 {
		cc.HandshakeIdleTimeout = defaultHandshakeIdleTimeout
	}
	if cc.MaxIdleTimeout == 0 {
		cc.MaxIdleTimeout = defaultMaxIdleTimeout
	}
	if cc.InitialStreamReceiveWindow == 0 {
		cc.InitialStreamReceiveWindow = defaultStreamWindow
	}
	if cc.MaxStreamReceiveWindow == 0 {
		cc.MaxStreamReceiveWindow = defaultMaxStreamWindow
	}
	if cc.InitialConnectionReceiveWindow == 0 {
		cc.InitialConnectionReceiveWindow = defaultConnWindow
	}
	if cc.MaxConnectionReceiveWindow == 0 {
		cc.MaxConnectionReceiveWindow = defaultMaxConnWindow
	}
	// Windows beyond what a varint offset allows are clipped, as quic-go
	// does (quicvarint.Max is a common "unlimited").
	const maxWindow = 1 << 60
	cc.InitialStreamReceiveWindow = min(cc.InitialStreamReceiveWindow, maxWindow)
	cc.InitialConnectionReceiveWindow = min(cc.InitialConnectionReceiveWindow, maxWindow)
	cc.MaxStreamReceiveWindow = min(max(cc.MaxStreamReceiveWindow, cc.InitialStreamReceiveWindow), maxWindow)
	cc.MaxConnectionReceiveWindow = min(max(cc.MaxConnectionReceiveWindow, cc.InitialConnectionReceiveWindow), maxWindow)
	switch {
	case cc.MaxIncomingStreams == 0:
		cc.MaxIncomingStreams = defaultMaxIncomingStreams
	case cc.MaxIncomingStreams < 0:
		cc.MaxIncomingStreams = 0
	}
	switch {
	case cc.MaxIncomingUniStreams == 0:
		cc.MaxIncomingUniStreams = defaultMaxIncomingStreams
	case cc.MaxIncomingUniStreams < 0:
		cc.MaxIncomingUniStreams = 0
	}
	if cc.KeepAlivePeriod < 0 {
		cc.KeepAlivePeriod = 0
	}
	switch {
	case cc.MaxConnections == 0:
		cc.MaxConnections = defaultMaxConnections
	case cc.MaxConnections < 0:
		cc.MaxConnections = math.MaxInt
	}
	switch {
	case cc.MaxHandshakes == 0:
		cc.MaxHandshakes = defaultMaxHandshakes
	case cc.MaxHandshakes < 0:
		cc.MaxHandshakes = math.MaxInt
	}
	if cc.AcceptBacklog <= 0 {
		cc.AcceptBacklog = defaultAcceptBacklog
	}
	switch {
	case cc.InitialPacketSize == 0:
		cc.InitialPacketSize = maxPacketSize
	case cc.InitialPacketSize < maxPacketSize:
		return nil, fmt.Errorf("quic: InitialPacketSize %d below %d", cc.InitialPacketSize, maxPacketSize)
	case cc.InitialPacketSize > maxProbeSize:
		cc.InitialPacketSize = maxProbeSize
	}
	if cc.CongestionControl > CongestionNewReno {
		return nil, fmt.Errorf("quic: unknown %v", cc.CongestionControl)
	}
	if cc.MaxConnectionSendBuffer == 0 {
		cc.MaxConnectionSendBuffer = defaultConnSendBuffer
	}
	switch {
	case cc.MaxReceiveFragments == 0:
		cc.MaxReceiveFragments = defaultMaxReceiveFragments
	case cc.MaxReceiveFragments < 0:
		cc.MaxReceiveFragments = -1
	}
	if cc.MaxOutOfOrderReceiveBytes == 0 {
		cc.MaxOutOfOrderReceiveBytes = 2 * min(cc.MaxConnectionReceiveWindow, 1<<61)
	}
	return cc, nil
}
