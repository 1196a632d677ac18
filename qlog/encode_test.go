package qlog_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	gqlog "github.com/quic-go/quic-go/qlog"
	gjsontext "github.com/quic-go/quic-go/qlogwriter/jsontext"

	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter/jsontext"
	"github.com/turboretry/turboretry/quic"
)

type ourEvent interface {
	Name() string
	Encode(*jsontext.Encoder, time.Time) error
}

type theirEvent interface {
	Name() string
	Encode(*gjsontext.Encoder, time.Time) error
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// TestSameJSONAsQuicGo encodes the same events with our qlog package and
// quic-go's and compares the JSON: qlog tools that read quic-go's traces
// read ours.
func TestSameJSONAsQuicGo(t *testing.T) {
	ap := netip.MustParseAddrPort("192.0.2.1:4433")
	ap6 := netip.MustParseAddrPort("[2001:db8::1]:443")
	cid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	ours, theirs := quic.ConnectionIDFromBytes(cid), quicgo.ConnectionIDFromBytes(cid)
	app := quic.ApplicationErrorCode(0x42)
	gapp := gqlog.ApplicationErrorCode(0x42)
	te := quic.TransportErrorCode(0x178)
	gte := gqlog.TransportErrorCode(0x178)
	redacted := "***"
	tok := [16]byte{9, 9}
	pairs := []struct {
		name   string
		ours   ourEvent
		theirs theirEvent
	}{
		{"connection_started",
			qlog.StartedConnection{Local: qlog.TupleEndpointInfo{IPv4: ap}, Remote: qlog.TupleEndpointInfo{IPv6: ap6}},
			gqlog.StartedConnection{Local: gqlog.TupleEndpointInfo{IPv4: ap}, Remote: gqlog.TupleEndpointInfo{IPv6: ap6}}},
		{"connection_started redacted",
			qlog.StartedConnection{Local: qlog.TupleEndpointInfo{IPv4: ap}, RedactedLocal: &redacted},
			gqlog.StartedConnection{Local: gqlog.TupleEndpointInfo{IPv4: ap}, RedactedLocal: &redacted}},
		{"tuple_assigned",
			qlog.TupleAssigned{TupleID: "1", Local: qlog.TupleEndpointInfo{IPv4: ap}, Remote: qlog.TupleEndpointInfo{IPv4: ap}},
			gqlog.TupleAssigned{TupleID: "1", Local: gqlog.TupleEndpointInfo{IPv4: ap}, Remote: gqlog.TupleEndpointInfo{IPv4: ap}}},
		{"connection_state_updated",
			qlog.ConnectionStateUpdated{State: qlog.ConnectionStateHandshakeConfirmed},
			gqlog.ConnectionStateUpdated{State: gqlog.ConnectionStateHandshakeConfirmed}},
		{"connection_closed application",
			qlog.ConnectionClosed{Initiator: qlog.InitiatorRemote, ApplicationError: &app, Reason: "bye"},
			gqlog.ConnectionClosed{Initiator: gqlog.InitiatorRemote, ApplicationError: &gapp, Reason: "bye"}},
		{"connection_closed crypto",
			qlog.ConnectionClosed{Initiator: qlog.InitiatorLocal, ConnectionError: &te, Reason: "alpn"},
			gqlog.ConnectionClosed{Initiator: gqlog.InitiatorLocal, ConnectionError: &gte, Reason: "alpn"}},
		{"connection_closed idle",
			qlog.ConnectionClosed{Initiator: qlog.InitiatorLocal, Trigger: qlog.ConnectionCloseTriggerIdleTimeout},
			gqlog.ConnectionClosed{Initiator: gqlog.InitiatorLocal, Trigger: gqlog.ConnectionCloseTriggerIdleTimeout}},
		{"packet_sent 1-RTT",
			qlog.PacketSent{
				Header: qlog.PacketHeader{PacketType: qlog.PacketType1RTT, KeyPhaseBit: qlog.KeyPhaseOne, PacketNumber: 42, DestConnectionID: ours},
				Raw:    qlog.RawInfo{Length: 1252, PayloadLength: 1200},
				Frames: []qlog.Frame{
					{Frame: &qlog.StreamFrame{StreamID: 4, Offset: 100, Length: 1000, Fin: true}},
					{Frame: &qlog.AckFrame{AckRanges: []qlog.AckRange{{Smallest: 10, Largest: 12}, {Smallest: 5, Largest: 5}}, DelayTime: 1500 * time.Microsecond}},
					{Frame: &qlog.MaxDataFrame{MaximumData: 1 << 20}},
					{Frame: &qlog.MaxStreamDataFrame{StreamID: 4, MaximumStreamData: 1 << 18}},
					{Frame: &qlog.MaxStreamsFrame{Type: qlog.StreamTypeBidi, MaxStreamNum: 100}},
					{Frame: &qlog.StreamsBlockedFrame{Type: qlog.StreamTypeUni, StreamLimit: 3}},
					{Frame: &qlog.DataBlockedFrame{MaximumData: 7}},
					{Frame: &qlog.StreamDataBlockedFrame{StreamID: 8, MaximumStreamData: 9}},
					{Frame: &qlog.ResetStreamFrame{StreamID: 8, ErrorCode: 3, FinalSize: 99}},
					{Frame: &qlog.StopSendingFrame{StreamID: 8, ErrorCode: 3}},
					{Frame: &qlog.NewConnectionIDFrame{SequenceNumber: 2, RetirePriorTo: 1, ConnectionID: ours, StatelessResetToken: tok}},
					{Frame: &qlog.RetireConnectionIDFrame{SequenceNumber: 1}},
					{Frame: &qlog.PathChallengeFrame{Data: [8]byte{1, 2}}},
					{Frame: &qlog.PathResponseFrame{Data: [8]byte{3, 4}}},
					{Frame: &qlog.DatagramFrame{Length: 50}},
					{Frame: &qlog.PingFrame{}},
					{Frame: &qlog.HandshakeDoneFrame{}},
					{Frame: &qlog.NewTokenFrame{Token: []byte{0xaa}}},
				},
				ECN:              qlog.ECT0,
				IsMTUProbePacket: true,
			},
			gqlog.PacketSent{
				Header: gqlog.PacketHeader{PacketType: gqlog.PacketType1RTT, KeyPhaseBit: gqlog.KeyPhaseOne, PacketNumber: 42, DestConnectionID: theirs},
				Raw:    gqlog.RawInfo{Length: 1252, PayloadLength: 1200},
				Frames: []gqlog.Frame{
					{Frame: &gqlog.StreamFrame{StreamID: 4, Offset: 100, Length: 1000, Fin: true}},
					{Frame: &gqlog.AckFrame{AckRanges: []gqlog.AckRange{{Smallest: 10, Largest: 12}, {Smallest: 5, Largest: 5}}, DelayTime: 1500 * time.Microsecond}},
					{Frame: &gqlog.MaxDataFrame{MaximumData: 1 << 20}},
					{Frame: &gqlog.MaxStreamDataFrame{StreamID: 4, MaximumStreamData: 1 << 18}},
					{Frame: &gqlog.MaxStreamsFrame{Type: 1, MaxStreamNum: 100}},
					{Frame: &gqlog.StreamsBlockedFrame{Type: 0, StreamLimit: 3}},
					{Frame: &gqlog.DataBlockedFrame{MaximumData: 7}},
					{Frame: &gqlog.StreamDataBlockedFrame{StreamID: 8, MaximumStreamData: 9}},
					{Frame: &gqlog.ResetStreamFrame{StreamID: 8, ErrorCode: 3, FinalSize: 99}},
					{Frame: &gqlog.StopSendingFrame{StreamID: 8, ErrorCode: 3}},
					{Frame: &gqlog.NewConnectionIDFrame{SequenceNumber: 2, RetirePriorTo: 1, ConnectionID: theirs, StatelessResetToken: tok}},
					{Frame: &gqlog.RetireConnectionIDFrame{SequenceNumber: 1}},
					{Frame: &gqlog.PathChallengeFrame{Data: [8]byte{1, 2}}},
					{Frame: &gqlog.PathResponseFrame{Data: [8]byte{3, 4}}},
					{Frame: &gqlog.DatagramFrame{Length: 50}},
					{Frame: &gqlog.PingFrame{}},
					{Frame: &gqlog.HandshakeDoneFrame{}},
					{Frame: &gqlog.NewTokenFrame{Token: []byte{0xaa}}},
				},
				ECN:              gqlog.ECT0,
				IsMTUProbePacket: true,
			}},
		{"packet_received Initial",
			qlog.PacketReceived{
				Header:                  qlog.PacketHeader{PacketType: qlog.PacketTypeInitial, PacketNumber: 0, Version: quic.Version1, SrcConnectionID: ours, DestConnectionID: ours, Token: &qlog.Token{Raw: []byte{1}}},
				Raw:                     qlog.RawInfo{Length: 1200, PayloadLength: 1100},
				DatagramPayloadChecksum: 0xabcdef,
				Frames:                  []qlog.Frame{{Frame: &qlog.CryptoFrame{Offset: 0, Length: 300}}, {Frame: &qlog.ConnectionCloseFrame{ErrorCode: 0x178, ReasonPhrase: "x"}}},
			},
			gqlog.PacketReceived{
				Header:                  gqlog.PacketHeader{PacketType: gqlog.PacketTypeInitial, PacketNumber: 0, Version: quicgo.Version1, SrcConnectionID: theirs, DestConnectionID: theirs, Token: &gqlog.Token{Raw: []byte{1}}},
				Raw:                     gqlog.RawInfo{Length: 1200, PayloadLength: 1100},
				DatagramPayloadChecksum: 0xabcdef,
				Frames:                  []gqlog.Frame{{Frame: &gqlog.CryptoFrame{Offset: 0, Length: 300}}, {Frame: &gqlog.ConnectionCloseFrame{ErrorCode: 0x178, ReasonPhrase: "x"}}},
			}},
		{"packet_buffered",
			qlog.PacketBuffered{Header: qlog.PacketHeader{PacketType: qlog.PacketTypeHandshake, PacketNumber: -1}, Raw: qlog.RawInfo{Length: 500, PayloadLength: qlog.OmitLength}},
			gqlog.PacketBuffered{Header: gqlog.PacketHeader{PacketType: gqlog.PacketTypeHandshake, PacketNumber: -1}, Raw: gqlog.RawInfo{Length: 500, PayloadLength: gqlog.OmitLength}}},
		{"mtu_updated", qlog.MTUUpdated{Value: 1452, Done: true}, gqlog.MTUUpdated{Value: 1452, Done: true}},
		{"metrics_updated",
			qlog.MetricsUpdated{MinRTT: time.Millisecond, SmoothedRTT: 2 * time.Millisecond, CongestionWindow: 12000, BytesInFlight: 3000},
			gqlog.MetricsUpdated{MinRTT: time.Millisecond, SmoothedRTT: 2 * time.Millisecond, CongestionWindow: 12000, BytesInFlight: 3000}},
		{"packet_lost",
			qlog.PacketLost{Header: qlog.PacketHeader{PacketType: qlog.PacketType1RTT, PacketNumber: 7}, Trigger: qlog.PacketLossTimeThreshold},
			gqlog.PacketLost{Header: gqlog.PacketHeader{PacketType: gqlog.PacketType1RTT, PacketNumber: 7}, Trigger: gqlog.PacketLossTimeThreshold}},
		{"key_updated",
			qlog.KeyUpdated{Trigger: qlog.KeyUpdateRemote, KeyType: qlog.KeyTypeClient1RTT, KeyPhase: 1},
			gqlog.KeyUpdated{Trigger: gqlog.KeyUpdateRemote, KeyType: gqlog.KeyTypeClient1RTT, KeyPhase: 1}},
		{"alpn_information", qlog.ALPNInformation{ChosenALPN: "h3"}, gqlog.ALPNInformation{ChosenALPN: "h3"}},
		{"version_information",
			qlog.VersionInformation{ClientVersions: []quic.Version{quic.Version1}, ChosenVersion: quic.Version1},
			gqlog.VersionInformation{ClientVersions: []quicgo.Version{quicgo.Version1}, ChosenVersion: quicgo.Version1}},
		{"parameters_set",
			qlog.ParametersSet{Initiator: qlog.InitiatorLocal, SentBy: quic.PerspectiveServer, OriginalDestinationConnectionID: ours, InitialSourceConnectionID: ours,
				MaxIdleTimeout: 30 * time.Second, MaxUDPPayloadSize: 1452, AckDelayExponent: 3, MaxAckDelay: 25 * time.Millisecond, ActiveConnectionIDLimit: 4,
				InitialMaxData: 1 << 20, InitialMaxStreamDataBidiLocal: 1 << 19, InitialMaxStreamDataBidiRemote: 1 << 19, InitialMaxStreamDataUni: 1 << 19,
				InitialMaxStreamsBidi: 100, InitialMaxStreamsUni: 100, MaxDatagramFrameSize: -1},
			gqlog.ParametersSet{Initiator: gqlog.InitiatorLocal, SentBy: 1, OriginalDestinationConnectionID: theirs, InitialSourceConnectionID: theirs,
				MaxIdleTimeout: 30 * time.Second, MaxUDPPayloadSize: 1452, AckDelayExponent: 3, MaxAckDelay: 25 * time.Millisecond, ActiveConnectionIDLimit: 4,
				InitialMaxData: 1 << 20, InitialMaxStreamDataBidiLocal: 1 << 19, InitialMaxStreamDataBidiRemote: 1 << 19, InitialMaxStreamDataUni: 1 << 19,
				InitialMaxStreamsBidi: 100, InitialMaxStreamsUni: 100, MaxDatagramFrameSize: -1}},
	}
	for _, p := range pairs {
		var a, b bytes.Buffer
		if err := p.ours.Encode(jsontext.NewEncoder(&a), time.Time{}); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if err := p.theirs.Encode(gjsontext.NewEncoder(&b), time.Time{}); err != nil {
			t.Fatalf("%s (quic-go): %v", p.name, err)
		}
		if p.ours.Name() != p.theirs.Name() {
			t.Errorf("%s: name %q, quic-go %q", p.name, p.ours.Name(), p.theirs.Name())
		}
		if got, want := decode(t, a.Bytes()), decode(t, b.Bytes()); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nours    %s\nquic-go %s", p.name, a.Bytes(), b.Bytes())
		}
	}
}
