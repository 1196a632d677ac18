package qlog

import (
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic/quictype"
)

// OmitLength in a RawInfo field leaves that length out of the qlog.
const OmitLength = -1

// RawInfo holds the lengths of a packet or datagram.
type RawInfo struct {
	Length        int // the whole packet, header and AEAD tag included
	PayloadLength int // the payload, without the AEAD tag
}

func (i RawInfo) encode(enc *jsontext.Encoder) error {
	e := &encoder{enc: enc}
	e.begin()
	if i.Length != OmitLength {
		e.int("length", int64(i.Length))
	}
	if i.PayloadLength != OmitLength {
		e.int("payload_length", int64(i.PayloadLength))
	}
	e.end()
	return e.err
}

// TupleEndpointInfo is one end of a network tuple.
type TupleEndpointInfo struct {
	IPv4 netip.AddrPort
	IPv6 netip.AddrPort
}

// encode writes the endpoint, or the redacted text in place of its
// address when redacted is set.
func (p TupleEndpointInfo) encode(enc *jsontext.Encoder, redacted *string) error {
	e := &encoder{enc: enc}
	e.begin()
	switch {
	case redacted != nil:
		if p.IPv4.IsValid() {
			e.str("address_v4", *redacted)
		} else {
			e.str("address_v6", *redacted)
		}
	default:
		if p.IPv4.IsValid() {
			e.name("address_v4")
			e.addrPort(p.IPv4)
		}
		if p.IPv6.IsValid() {
			e.name("address_v6")
			e.addrPort(p.IPv6)
		}
	}
	e.end()
	return e.err
}

// StartedConnection is logged when a connection starts.
type StartedConnection struct {
	Local, Remote TupleEndpointInfo
	// Set by RedactIPs: written in place of the addresses.
	RedactedLocal, RedactedRemote *string
}

// Name implements qlogwriter.Event.
func (e StartedConnection) Name() string { return "transport:connection_started" }

// Encode implements qlogwriter.Event.
func (e StartedConnection) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.name("local")
	w.value(func(enc *jsontext.Encoder) error { return e.Local.encode(enc, e.RedactedLocal) })
	w.name("remote")
	w.value(func(enc *jsontext.Encoder) error { return e.Remote.encode(enc, e.RedactedRemote) })
	w.end()
	return w.err
}

// TupleAssigned gives a network tuple an ID that packet events refer to
// (PacketSent.Tuple); the connection's first tuple has the ID "".
type TupleAssigned struct {
	TupleID                       string
	Local, Remote                 TupleEndpointInfo
	RedactedLocal, RedactedRemote *string
}

// Name implements qlogwriter.Event.
func (e TupleAssigned) Name() string { return "transport:tuple_assigned" }

// Encode implements qlogwriter.Event.
func (e TupleAssigned) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("tuple_id", e.TupleID)
	w.name("tuple_local")
	w.value(func(enc *jsontext.Encoder) error { return e.Local.encode(enc, e.RedactedLocal) })
	w.name("tuple_remote")
	w.value(func(enc *jsontext.Encoder) error { return e.Remote.encode(enc, e.RedactedRemote) })
	w.end()
	return w.err
}

// VersionInformation is logged when the version is chosen.
type VersionInformation struct {
	ClientVersions, ServerVersions []Version
	ChosenVersion                  Version
}

// Name implements qlogwriter.Event.
func (e VersionInformation) Name() string { return "transport:version_information" }

// Encode implements qlogwriter.Event.
func (e VersionInformation) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	if len(e.ClientVersions) > 0 {
		w.versions("client_versions", e.ClientVersions)
	}
	if len(e.ServerVersions) > 0 {
		w.versions("server_versions", e.ServerVersions)
	}
	w.str("chosen_version", versionHex(e.ChosenVersion))
	w.end()
	return w.err
}

// ConnectionClosed is logged when a connection ends: with the transport
// or application error code, or with only a trigger.
type ConnectionClosed struct {
	Initiator        Initiator
	ConnectionError  *TransportErrorCode
	ApplicationError *ApplicationErrorCode
	Reason           string
	Trigger          ConnectionCloseTrigger
}

// Name implements qlogwriter.Event.
func (e ConnectionClosed) Name() string { return "transport:connection_closed" }

// Encode implements qlogwriter.Event.
func (e ConnectionClosed) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("initiator", string(e.Initiator))
	if e.ConnectionError != nil {
		if name := transportErrorName(*e.ConnectionError); name != "" {
			w.str("connection_error", name)
		} else {
			w.str("connection_error", "unknown")
			w.uint("error_code", uint64(*e.ConnectionError))
		}
	}
	if e.ApplicationError != nil {
		w.str("application_error", "unknown")
		w.uint("error_code", uint64(*e.ApplicationError))
	}
	if e.ConnectionError != nil || e.ApplicationError != nil {
		w.str("reason", e.Reason)
	}
	if e.Trigger != "" {
		w.str("trigger", string(e.Trigger))
	}
	w.end()
	return w.err
}

// ConnectionStateUpdated is logged at each step of the connection's life.
type ConnectionStateUpdated struct {
	State ConnectionState
}

// Name implements qlogwriter.Event.
func (e ConnectionStateUpdated) Name() string { return "quic:connection_state_updated" }

// Encode implements qlogwriter.Event.
func (e ConnectionStateUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("new", string(e.State))
	w.end()
	return w.err
}

// packetFields writes the fields PacketSent and PacketReceived share.
func (w *encoder) packetFields(h PacketHeader, raw RawInfo, sum DatagramPayloadChecksum, frames []Frame, ecn ECN, trigger string) {
	w.name("header")
	w.value(h.encode)
	w.name("raw")
	w.value(raw.encode)
	if sum != 0 {
		w.uint("datagram_payload_checksum", uint64(sum))
	}
	if len(frames) > 0 {
		w.name("frames")
		w.value(func(enc *jsontext.Encoder) error { return encodeFrames(enc, frames) })
	}
	if ecn != ECNUnsupported {
		w.str("ecn", string(ecn))
	}
	if trigger != "" {
		w.str("trigger", trigger)
	}
}

// PacketSent is logged for every packet sent.
type PacketSent struct {
	Header                  PacketHeader
	Raw                     RawInfo
	DatagramPayloadChecksum DatagramPayloadChecksum
	Frames                  []Frame
	ECN                     ECN
	Trigger                 string
	SupportedVersions       []Version
	IsMTUProbePacket        bool
	// Tuple is the ID of the tuple the packet went on ("" for the first).
	Tuple string
}

// Name implements qlogwriter.Event.
func (e PacketSent) Name() string { return "transport:packet_sent" }

// Encode implements qlogwriter.Event.
func (e PacketSent) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.packetFields(e.Header, e.Raw, e.DatagramPayloadChecksum, e.Frames, e.ECN, e.Trigger)
	if e.IsMTUProbePacket {
		w.bool("is_mtu_probe_packet", true)
	}
	if e.Tuple != "" {
		w.str("tuple", e.Tuple)
	}
	w.end()
	return w.err
}

// PacketReceived is logged for every packet received and decrypted.
type PacketReceived struct {
	Header                  PacketHeader
	Raw                     RawInfo
	DatagramPayloadChecksum DatagramPayloadChecksum
	Frames                  []Frame
	ECN                     ECN
	Trigger                 string
	// Tuple is the ID of the tuple the packet came on ("" for the first).
	Tuple string
}

// Name implements qlogwriter.Event.
func (e PacketReceived) Name() string { return "transport:packet_received" }

// Encode implements qlogwriter.Event.
func (e PacketReceived) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.packetFields(e.Header, e.Raw, e.DatagramPayloadChecksum, e.Frames, e.ECN, e.Trigger)
	if e.Tuple != "" {
		w.str("tuple", e.Tuple)
	}
	w.end()
	return w.err
}

func (e *encoder) versionNegotiation(h PacketHeaderVersionNegotiation, vs []Version) {
	e.begin()
	e.name("header")
	e.value(h.encode)
	e.versions("supported_versions", vs)
	e.end()
}

// VersionNegotiationReceived is logged for a Version Negotiation packet
// received.
type VersionNegotiationReceived struct {
	Header            PacketHeaderVersionNegotiation
	SupportedVersions []Version
}

// Name implements qlogwriter.Event.
func (e VersionNegotiationReceived) Name() string { return "transport:packet_received" }

// Encode implements qlogwriter.Event.
func (e VersionNegotiationReceived) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.versionNegotiation(e.Header, e.SupportedVersions)
	return w.err
}

// VersionNegotiationSent is logged for a Version Negotiation packet sent.
type VersionNegotiationSent struct {
	Header            PacketHeaderVersionNegotiation
	SupportedVersions []Version
}

// Name implements qlogwriter.Event.
func (e VersionNegotiationSent) Name() string { return "transport:packet_sent" }

// Encode implements qlogwriter.Event.
func (e VersionNegotiationSent) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.versionNegotiation(e.Header, e.SupportedVersions)
	return w.err
}

// PacketBuffered is logged for a packet kept until its keys are available.
type PacketBuffered struct {
	Header                  PacketHeader
	Raw                     RawInfo
	DatagramPayloadChecksum DatagramPayloadChecksum
}

// Name implements qlogwriter.Event.
func (e PacketBuffered) Name() string { return "transport:packet_buffered" }

// Encode implements qlogwriter.Event.
func (e PacketBuffered) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.name("header")
	w.value(e.Header.encode)
	w.name("raw")
	w.value(e.Raw.encode)
	if e.DatagramPayloadChecksum != 0 {
		w.uint("datagram_payload_checksum", uint64(e.DatagramPayloadChecksum))
	}
	w.str("trigger", "keys_unavailable")
	w.end()
	return w.err
}

// PacketDropped is logged for a received packet that was dropped.
type PacketDropped struct {
	Header                  PacketHeader
	Raw                     RawInfo
	DatagramPayloadChecksum DatagramPayloadChecksum
	Trigger                 PacketDropReason
}

// Name implements qlogwriter.Event.
func (e PacketDropped) Name() string { return "transport:packet_dropped" }

// Encode implements qlogwriter.Event.
func (e PacketDropped) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	if e.Header.PacketType != "" {
		w.name("header")
		w.value(e.Header.encode)
	}
	w.name("raw")
	w.value(e.Raw.encode)
	if e.DatagramPayloadChecksum != 0 {
		w.uint("datagram_payload_checksum", uint64(e.DatagramPayloadChecksum))
	}
	w.str("trigger", e.Trigger.trigger())
	w.end()
	return w.err
}

// DatagramDropped is logged for a UDP datagram dropped before any packet
// in it was looked at.
type DatagramDropped struct {
	Direction Direction
	Raw       RawInfo
	Trigger   string
}

// Name implements qlogwriter.Event.
func (e DatagramDropped) Name() string { return "quic:datagram_dropped" }

// Encode implements qlogwriter.Event.
func (e DatagramDropped) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	if e.Direction != "" {
		w.str("direction", string(e.Direction))
	}
	w.name("raw")
	w.value(e.Raw.encode)
	if e.Trigger != "" {
		w.str("trigger", e.Trigger)
	}
	w.end()
	return w.err
}

// StreamPriorityUpdated is logged when a stream's priority changes.
type StreamPriorityUpdated struct {
	StreamID    StreamID
	Urgency     int8
	Incremental bool
}

// Name implements qlogwriter.Event.
func (e StreamPriorityUpdated) Name() string { return "transport:priority_updated" }

// Encode implements qlogwriter.Event.
func (e StreamPriorityUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.int("stream_id", int64(e.StreamID))
	w.int("urgency", int64(e.Urgency))
	w.bool("incremental", e.Incremental)
	w.end()
	return w.err
}

// MTUUpdated is logged when path MTU discovery raises the datagram size;
// Done says that the search ended.
type MTUUpdated struct {
	Value int
	Done  bool
}

// Name implements qlogwriter.Event.
func (e MTUUpdated) Name() string { return "recovery:mtu_updated" }

// Encode implements qlogwriter.Event.
func (e MTUUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.int("new", int64(e.Value))
	w.bool("done", e.Done)
	w.end()
	return w.err
}

// RecoveryParametersSet is logged once with the loss-recovery constants.
type RecoveryParametersSet struct {
	ReorderingThreshold     uint16
	PacketThresholdDisabled bool
	TimeThreshold           float64 // a multiple of the RTT
	TimerGranularity        time.Duration
	InitialCongestionWindow ByteCount
	InitialRTT              time.Duration
}

// Name implements qlogwriter.Event.
func (e RecoveryParametersSet) Name() string { return "quic:recovery_parameters_set" }

// Encode implements qlogwriter.Event.
func (e RecoveryParametersSet) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	if !e.PacketThresholdDisabled {
		w.uint("reordering_threshold", uint64(e.ReorderingThreshold))
	}
	w.float("time_threshold", e.TimeThreshold)
	w.ms("timer_granularity", e.TimerGranularity)
	w.ms("initial_rtt", e.InitialRTT)
	w.int("initial_congestion_window", int64(e.InitialCongestionWindow))
	w.end()
	return w.err
}

// MetricsUpdated is logged when recovery metrics change. Zero RTTs were
// not updated; the window and in-flight figures are always the current
// ones.
type MetricsUpdated struct {
	MinRTT           time.Duration
	SmoothedRTT      time.Duration
	LatestRTT        time.Duration
	RTTVariance      time.Duration
	CongestionWindow int
	BytesInFlight    int
	PacketsInFlight  int
}

// Name implements qlogwriter.Event.
func (e MetricsUpdated) Name() string { return "recovery:metrics_updated" }

// Encode implements qlogwriter.Event.
func (e MetricsUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	if e.MinRTT != 0 {
		w.ms("min_rtt", e.MinRTT)
	}
	if e.SmoothedRTT != 0 {
		w.ms("smoothed_rtt", e.SmoothedRTT)
	}
	if e.LatestRTT != 0 {
		w.ms("latest_rtt", e.LatestRTT)
	}
	if e.RTTVariance != 0 || e.SmoothedRTT != 0 {
		w.ms("rtt_variance", e.RTTVariance)
	}
	w.int("congestion_window", int64(e.CongestionWindow))
	w.int("bytes_in_flight", int64(e.BytesInFlight))
	w.int("packets_in_flight", int64(e.PacketsInFlight))
	w.end()
	return w.err
}

// PTOCountUpdated is logged when the PTO count changes.
type PTOCountUpdated struct {
	PTOCount uint32
}

// Name implements qlogwriter.Event.
func (e PTOCountUpdated) Name() string { return "recovery:metrics_updated" }

// Encode implements qlogwriter.Event.
func (e PTOCountUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.uint("pto_count", uint64(e.PTOCount))
	w.end()
	return w.err
}

// PacketLost is logged when a packet is declared lost.
type PacketLost struct {
	Header           PacketHeader
	IsMTUProbePacket bool
	Trigger          PacketLossReason
}

// Name implements qlogwriter.Event.
func (e PacketLost) Name() string { return "recovery:packet_lost" }

// Encode implements qlogwriter.Event.
func (e PacketLost) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.name("header")
	w.value(e.Header.encode)
	if e.IsMTUProbePacket {
		w.bool("is_mtu_probe_packet", true)
	}
	if e.Trigger != "" {
		w.str("trigger", string(e.Trigger))
	}
	w.end()
	return w.err
}

// SpuriousLoss is logged when a packet declared lost is acknowledged.
type SpuriousLoss struct {
	EncryptionLevel  EncryptionLevel
	PacketNumber     PacketNumber
	PacketReordering uint64
	TimeReordering   time.Duration
}

// Name implements qlogwriter.Event.
func (e SpuriousLoss) Name() string { return "recovery:spurious_loss" }

func packetNumberSpace(l EncryptionLevel) string {
	switch l {
	case quictype.EncryptionInitial:
		return "initial"
	case quictype.EncryptionHandshake:
		return "handshake"
	}
	return "application_data"
}

// Encode implements qlogwriter.Event.
func (e SpuriousLoss) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("packet_number_space", packetNumberSpace(e.EncryptionLevel))
	w.int("packet_number", int64(e.PacketNumber))
	w.uint("reordering_packets", e.PacketReordering)
	w.ms("reordering_time", e.TimeReordering)
	w.end()
	return w.err
}

// KeyUpdated is logged when keys are installed or updated.
type KeyUpdated struct {
	Trigger  KeyUpdateTrigger
	KeyType  KeyType
	KeyPhase KeyPhase // 1-RTT keys only
}

// Name implements qlogwriter.Event.
func (e KeyUpdated) Name() string { return "security:key_updated" }

func isOneRTTKey(t KeyType) bool { return t == KeyTypeClient1RTT || t == KeyTypeServer1RTT }

// Encode implements qlogwriter.Event.
func (e KeyUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("trigger", string(e.Trigger))
	w.str("key_type", string(e.KeyType))
	if isOneRTTKey(e.KeyType) {
		w.uint("key_phase", uint64(e.KeyPhase))
	}
	w.end()
	return w.err
}

// KeyDiscarded is logged when keys are dropped.
type KeyDiscarded struct {
	KeyType  KeyType
	KeyPhase KeyPhase // 1-RTT keys only
}

// Name implements qlogwriter.Event.
func (e KeyDiscarded) Name() string { return "security:key_discarded" }

// Encode implements qlogwriter.Event.
func (e KeyDiscarded) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	if !isOneRTTKey(e.KeyType) {
		w.str("trigger", "tls")
	}
	w.str("key_type", string(e.KeyType))
	if isOneRTTKey(e.KeyType) {
		w.uint("key_phase", uint64(e.KeyPhase))
	}
	w.end()
	return w.err
}

// ParametersSet is logged with our transport parameters and the peer's.
type ParametersSet struct {
	Initiator                       Initiator
	SentBy                          Perspective
	OriginalDestinationConnectionID ConnectionID
	InitialSourceConnectionID       ConnectionID
	RetrySourceConnectionID         ConnectionID
	StatelessResetToken             *StatelessResetToken
	DisableActiveMigration          bool
	MaxIdleTimeout                  time.Duration
	MaxUDPPayloadSize               ByteCount
	AckDelayExponent                uint8
	MaxAckDelay                     time.Duration
	ActiveConnectionIDLimit         uint64
	InitialMaxData                  ByteCount
	InitialMaxStreamDataBidiLocal   ByteCount
	InitialMaxStreamDataBidiRemote  ByteCount
	InitialMaxStreamDataUni         ByteCount
	InitialMaxStreamsBidi           int64
	InitialMaxStreamsUni            int64
	PreferredAddress                *PreferredAddress
	MaxDatagramFrameSize            ByteCount
	EnableResetStreamAt             bool
}

// Name implements qlogwriter.Event.
func (e ParametersSet) Name() string { return "transport:parameters_set" }

// Encode implements qlogwriter.Event.
func (e ParametersSet) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	if e.Initiator != "" {
		w.str("initiator", string(e.Initiator))
	}
	if e.SentBy == quictype.PerspectiveServer {
		if e.OriginalDestinationConnectionID.Valid() {
			w.str("original_destination_connection_id", e.OriginalDestinationConnectionID.String())
		}
		if e.StatelessResetToken != nil {
			w.hex("stateless_reset_token", e.StatelessResetToken[:])
		}
		if e.RetrySourceConnectionID.Valid() {
			w.str("retry_source_connection_id", e.RetrySourceConnectionID.String())
		}
	}
	if e.InitialSourceConnectionID.Valid() {
		w.str("initial_source_connection_id", e.InitialSourceConnectionID.String())
	}
	w.bool("disable_active_migration", e.DisableActiveMigration)
	w.ms("max_idle_timeout", e.MaxIdleTimeout)
	w.int("max_udp_payload_size", int64(e.MaxUDPPayloadSize))
	w.uint("ack_delay_exponent", uint64(e.AckDelayExponent))
	w.ms("max_ack_delay", e.MaxAckDelay)
	w.uint("active_connection_id_limit", e.ActiveConnectionIDLimit)
	w.int("initial_max_data", int64(e.InitialMaxData))
	w.int("initial_max_stream_data_bidi_local", int64(e.InitialMaxStreamDataBidiLocal))
	w.int("initial_max_stream_data_bidi_remote", int64(e.InitialMaxStreamDataBidiRemote))
	w.int("initial_max_stream_data_uni", int64(e.InitialMaxStreamDataUni))
	w.int("initial_max_streams_bidi", e.InitialMaxStreamsBidi)
	w.int("initial_max_streams_uni", e.InitialMaxStreamsUni)
	if e.PreferredAddress != nil {
		w.name("preferred_address")
		w.value(e.PreferredAddress.encode)
	}
	if e.MaxDatagramFrameSize != quictype.InvalidByteCount {
		w.int("max_datagram_frame_size", int64(e.MaxDatagramFrameSize))
	}
	if e.EnableResetStreamAt {
		w.bool("reset_stream_at", true)
	}
	w.end()
	return w.err
}

// ParametersRestored is logged when a client restores the server's
// parameters remembered for 0-RTT.
type ParametersRestored struct {
	ActiveConnectionIDLimit        uint64
	InitialMaxData                 ByteCount
	InitialMaxStreamDataBidiLocal  ByteCount
	InitialMaxStreamDataBidiRemote ByteCount
	InitialMaxStreamDataUni        ByteCount
	InitialMaxStreamsBidi          int64
	InitialMaxStreamsUni           int64
	MaxDatagramFrameSize           ByteCount
	EnableResetStreamAt            bool
}

// Name implements qlogwriter.Event.
func (e ParametersRestored) Name() string { return "transport:parameters_restored" }

// Encode implements qlogwriter.Event.
func (e ParametersRestored) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.uint("active_connection_id_limit", e.ActiveConnectionIDLimit)
	w.int("initial_max_data", int64(e.InitialMaxData))
	w.int("initial_max_stream_data_bidi_local", int64(e.InitialMaxStreamDataBidiLocal))
	w.int("initial_max_stream_data_bidi_remote", int64(e.InitialMaxStreamDataBidiRemote))
	w.int("initial_max_stream_data_uni", int64(e.InitialMaxStreamDataUni))
	w.int("initial_max_streams_bidi", e.InitialMaxStreamsBidi)
	w.int("initial_max_streams_uni", e.InitialMaxStreamsUni)
	if e.MaxDatagramFrameSize != quictype.InvalidByteCount {
		w.int("max_datagram_frame_size", int64(e.MaxDatagramFrameSize))
	}
	if e.EnableResetStreamAt {
		w.bool("reset_stream_at", true)
	}
	w.end()
	return w.err
}

// PreferredAddress is the server's preferred_address parameter.
type PreferredAddress struct {
	IPv4, IPv6                 netip.AddrPort
	ConnectionID               ConnectionID
	StatelessResetToken        StatelessResetToken
	RedactedIPv4, RedactedIPv6 *string
}

func (a PreferredAddress) encode(enc *jsontext.Encoder) error {
	w := &encoder{enc: enc}
	w.begin()
	for _, v := range []struct {
		ip, port string
		ap       netip.AddrPort
		redacted *string
	}{{"ip_v4", "port_v4", a.IPv4, a.RedactedIPv4}, {"ip_v6", "port_v6", a.IPv6, a.RedactedIPv6}} {
		if v.redacted != nil {
			w.str(v.ip, *v.redacted)
			continue
		}
		if v.ap.IsValid() {
			w.str(v.ip, v.ap.Addr().String())
			w.uint(v.port, uint64(v.ap.Port()))
		}
	}
	w.str("connection_id", a.ConnectionID.String())
	w.hex("stateless_reset_token", a.StatelessResetToken[:])
	w.end()
	return w.err
}

// TimerUpdated is logged when a loss-recovery timer is set, expires or is
// cancelled.
type TimerUpdated struct {
	Type      TimerEventType
	TimerType TimerType
	EncLevel  EncryptionLevel
	Time      time.Time
}

// Name implements qlogwriter.Event.
func (e TimerUpdated) Name() string { return "recovery:loss_timer_updated" }

// Encode implements qlogwriter.Event.
func (e TimerUpdated) Encode(enc *jsontext.Encoder, t time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("event_type", string(e.Type))
	if e.Type == TimerEventTypeSet {
		w.str("timer_type", string(e.TimerType))
		w.str("packet_number_space", packetNumberSpace(e.EncLevel))
		w.ms("delta", e.Time.Sub(t))
	}
	w.end()
	return w.err
}

// CongestionStateUpdated is logged when the congestion controller changes
// phase.
type CongestionStateUpdated struct {
	State CongestionState
}

// Name implements qlogwriter.Event.
func (e CongestionStateUpdated) Name() string { return "recovery:congestion_state_updated" }

// Encode implements qlogwriter.Event.
func (e CongestionStateUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("new", string(e.State))
	w.end()
	return w.err
}

// ECNStateUpdated is logged when ECN validation changes state.
type ECNStateUpdated struct {
	State   ECNState
	Trigger string
}

// Name implements qlogwriter.Event.
func (e ECNStateUpdated) Name() string { return "recovery:ecn_state_updated" }

// Encode implements qlogwriter.Event.
func (e ECNStateUpdated) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("new", string(e.State))
	if e.Trigger != "" {
		w.str("trigger", e.Trigger)
	}
	w.end()
	return w.err
}

// ALPNInformation is logged with the negotiated application protocol.
type ALPNInformation struct {
	ChosenALPN string
}

// Name implements qlogwriter.Event.
func (e ALPNInformation) Name() string { return "transport:alpn_information" }

// Encode implements qlogwriter.Event.
func (e ALPNInformation) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.name("chosen_alpn")
	w.begin()
	w.str("string_value", e.ChosenALPN)
	w.end()
	w.end()
	return w.err
}

// DebugEvent is a free-form event.
type DebugEvent struct {
	EventName string
	Message   string
}

// Name implements qlogwriter.Event.
func (e DebugEvent) Name() string {
	if e.EventName == "" {
		return "transport:debug"
	}
	return "transport:" + e.EventName
}

// Encode implements qlogwriter.Event.
func (e DebugEvent) Encode(enc *jsontext.Encoder, _ time.Time) error {
	w := &encoder{enc: enc}
	w.begin()
	w.str("message", e.Message)
	w.end()
	return w.err
}
