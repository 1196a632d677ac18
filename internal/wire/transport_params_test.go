package wire

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

func fullServerParams() TransportParameters {
	p := DefaultTransportParameters()
	p.OriginalDestinationConnectionID, p.HasOriginalDestinationConnectionID = []byte{1, 2, 3, 4, 5, 6, 7, 8}, true
	p.MaxIdleTimeout = 30 * time.Second
	p.StatelessResetToken, p.HasStatelessResetToken = [16]byte{0xaa, 15: 0xbb}, true
	p.MaxUDPPayloadSize = 1452
	p.InitialMaxData = 1 << 20
	p.InitialMaxStreamDataBidiLocal = 1 << 16
	p.InitialMaxStreamDataBidiRemote = 1 << 17
	p.InitialMaxStreamDataUni = 1 << 18
	p.InitialMaxStreamsBidi = 100
	p.InitialMaxStreamsUni = MaxStreamCount
	p.AckDelayExponent = 20
	p.MaxAckDelay = (1<<14 - 1) * time.Millisecond
	p.DisableActiveMigration = true
	p.PreferredAddress = &PreferredAddress{
		IPv4:                netip.MustParseAddrPort("192.0.2.1:443"),
		IPv6:                netip.MustParseAddrPort("[2001:db8::1]:4433"),
		ConnectionID:        []byte{9, 9, 9, 9},
		StatelessResetToken: [16]byte{1, 15: 2},
	}
	p.ActiveConnectionIDLimit = 8
	p.InitialSourceConnectionID, p.HasInitialSourceConnectionID = []byte{7, 7}, true
	p.RetrySourceConnectionID, p.HasRetrySourceConnectionID = nil, true // present but empty
	p.MaxDatagramFrameSize = 65535
	p.VersionInformation = &VersionInformation{ChosenVersion: Version1, AvailableVersions: []Version{Version2, Version1}}
	p.ResetStreamAt = true
	return p
}

func TestTransportParametersRoundTrip(t *testing.T) {
	server := fullServerParams()
	client := DefaultTransportParameters()
	client.InitialMaxData = 12345
	client.InitialSourceConnectionID, client.HasInitialSourceConnectionID = nil, true // zero-length CID
	client.VersionInformation = &VersionInformation{ChosenVersion: Version2}
	for _, c := range []struct {
		role protocol.Perspective
		p    TransportParameters
	}{{protocol.PerspectiveServer, server}, {protocol.PerspectiveClient, client}, {protocol.PerspectiveClient, DefaultTransportParameters()}} {
		b, err := c.p.Marshal(nil, c.role)
		if err != nil {
			t.Fatalf("%s: Marshal: %v", c.role, err)
		}
		var got TransportParameters
		if err := got.Unmarshal(b, c.role); err != nil {
			t.Fatalf("%s: Unmarshal: %v", c.role, err)
		}
		if !reflect.DeepEqual(got, c.p) {
			t.Errorf("%s: round trip\ngot  %+v\nwant %+v", c.role, got, c.p)
		}
	}
	def := DefaultTransportParameters()
	if b, _ := def.Marshal(nil, protocol.PerspectiveClient); len(b) != 0 {
		t.Errorf("defaults marshal to %x, want nothing", b)
	}
}

func TestTransportParametersDefaultsAndPresence(t *testing.T) {
	var p TransportParameters
	if err := p.Unmarshal(nil, protocol.PerspectiveServer); err != nil {
		t.Fatal(err)
	}
	if p.MaxUDPPayloadSize != 65527 || p.AckDelayExponent != 3 || p.MaxAckDelay != 25*time.Millisecond ||
		p.ActiveConnectionIDLimit != 2 || p.MaxDatagramFrameSize != 0 || p.HasRetrySourceConnectionID {
		t.Errorf("defaults: %+v", p)
	}
	// retry_source_connection_id present and empty, plus a GREASE
	// parameter (31*5+27) and an unknown one, which are ignored.
	b := tpRaw(0x10, nil)
	b = append(b, tpRaw(31*5+27, []byte("grease"))...)
	b = append(b, tpRaw(0x3fff, nil)...)
	if err := p.Unmarshal(b, protocol.PerspectiveServer); err != nil {
		t.Fatal(err)
	}
	if !p.HasRetrySourceConnectionID || len(p.RetrySourceConnectionID) != 0 {
		t.Errorf("retry_source_connection_id presence lost: %+v", p)
	}
	if p.ResetStreamAt {
		t.Error("reset_stream_at set without the parameter")
	}
	// reset_stream_at is 0x1d with an empty value (draft section 3), from
	// either side.
	for _, role := range []protocol.Perspective{protocol.PerspectiveClient, protocol.PerspectiveServer} {
		if err := p.Unmarshal(tpRaw(0x1d, nil), role); err != nil || !p.ResetStreamAt {
			t.Errorf("%s reset_stream_at: %v, %v", role, p.ResetStreamAt, err)
		}
	}
	// Byte fields are copies, not views of the input.
	b = tpRaw(0x0f, []byte{1, 2, 3})
	if err := p.Unmarshal(b, protocol.PerspectiveClient); err != nil {
		t.Fatal(err)
	}
	b[2] = 0xff
	if p.InitialSourceConnectionID[0] != 1 {
		t.Error("InitialSourceConnectionID aliases the input")
	}
	// A huge idle timeout is clamped rather than overflowing.
	if err := p.Unmarshal(tpRaw(0x01, AppendVarint(nil, MaxVarint)), protocol.PerspectiveClient); err != nil || p.MaxIdleTimeout <= 0 {
		t.Errorf("max idle timeout %v, %v", p.MaxIdleTimeout, err)
	}
}

func tpRaw(id uint64, val []byte) []byte {
	b := AppendVarint(nil, id)
	b = AppendVarint(b, uint64(len(val)))
	return append(b, val...)
}

func tpVarint(id, v uint64) []byte { return tpRaw(id, AppendVarint(nil, v)) }

func TestTransportParametersErrors(t *testing.T) {
	prefAddr := func(cidLen int, extra int) []byte {
		v := make([]byte, 24)
		v = append(v, byte(cidLen))
		v = append(v, make([]byte, cidLen+16+extra)...)
		return v
	}
	tests := []struct {
		name   string
		b      []byte
		sender protocol.Perspective
		reason string
	}{
		{"duplicate", append(tpVarint(0x04, 1), tpVarint(0x04, 2)...), protocol.PerspectiveClient, "duplicate initial_max_data"},
		{"truncated id", []byte{0x40}, protocol.PerspectiveClient, "truncated parameter id"},
		{"truncated length", []byte{0x04}, protocol.PerspectiveClient, "truncated length"},
		{"length beyond extension", []byte{0x04, 0x05, 0x01}, protocol.PerspectiveClient, "longer than the extension"},
		{"varint with trailing byte", tpRaw(0x04, []byte{1, 2}), protocol.PerspectiveClient, "initial_max_data malformed"},
		{"empty varint", tpRaw(0x01, nil), protocol.PerspectiveClient, "max_idle_timeout malformed"},
		{"max_udp_payload_size 1199", tpVarint(0x03, 1199), protocol.PerspectiveClient, "max_udp_payload_size below 1200"},
		{"ack_delay_exponent 21", tpVarint(0x0a, 21), protocol.PerspectiveClient, "ack_delay_exponent above 20"},
		{"max_ack_delay 2^14", tpVarint(0x0b, 1<<14), protocol.PerspectiveClient, "max_ack_delay not below 2^14"},
		{"active_connection_id_limit 1", tpVarint(0x0e, 1), protocol.PerspectiveClient, "active_connection_id_limit below 2"},
		{"active_connection_id_limit 0", tpVarint(0x0e, 0), protocol.PerspectiveServer, "active_connection_id_limit below 2"},
		{"initial_max_streams_bidi > 2^60", tpVarint(0x08, 1<<60+1), protocol.PerspectiveClient, "initial_max_streams_bidi above 2^60"},
		{"initial_max_streams_uni > 2^60", tpVarint(0x09, 1<<60+1), protocol.PerspectiveClient, "initial_max_streams_uni above 2^60"},
		{"initial_source_connection_id 21 bytes", tpRaw(0x0f, make([]byte, 21)), protocol.PerspectiveClient, "initial_source_connection_id longer than 20"},
		{"original_destination_connection_id 21 bytes", tpRaw(0x00, make([]byte, 21)), protocol.PerspectiveServer, "original_destination_connection_id longer than 20"},
		{"reset token 15 bytes", tpRaw(0x02, make([]byte, 15)), protocol.PerspectiveServer, "stateless_reset_token not 16 bytes"},
		{"disable_active_migration with value", tpRaw(0x0c, []byte{1}), protocol.PerspectiveClient, "disable_active_migration not empty"},
		{"reset_stream_at with value", tpRaw(0x1d, []byte{0}), protocol.PerspectiveServer, "reset_stream_at not empty"},
		{"duplicate reset_stream_at", append(tpRaw(0x1d, nil), tpRaw(0x1d, nil)...), protocol.PerspectiveClient, "duplicate reset_stream_at"},
		{"client sends original_destination_connection_id", tpRaw(0x00, []byte{1}), protocol.PerspectiveClient, "original_destination_connection_id sent by a client"},
		{"client sends stateless_reset_token", tpRaw(0x02, make([]byte, 16)), protocol.PerspectiveClient, "stateless_reset_token sent by a client"},
		{"client sends preferred_address", tpRaw(0x0d, prefAddr(4, 0)), protocol.PerspectiveClient, "preferred_address sent by a client"},
		{"client sends retry_source_connection_id", tpRaw(0x10, nil), protocol.PerspectiveClient, "retry_source_connection_id sent by a client"},
		{"preferred_address zero-length CID", tpRaw(0x0d, prefAddr(0, 0)), protocol.PerspectiveServer, "preferred_address with zero-length connection ID"},
		{"preferred_address CID 21", tpRaw(0x0d, prefAddr(21, 0)), protocol.PerspectiveServer, "preferred_address connection ID longer than 20"},
		{"preferred_address too long", tpRaw(0x0d, prefAddr(4, 1)), protocol.PerspectiveServer, "preferred_address length does not match"},
		{"preferred_address truncated", tpRaw(0x0d, make([]byte, 20)), protocol.PerspectiveServer, "preferred_address truncated"},
		{"version_information chosen 0", tpRaw(0x11, []byte{0, 0, 0, 0, 0, 0, 0, 1}), protocol.PerspectiveClient, "version_information chosen version 0"},
		{"version_information available 0", tpRaw(0x11, []byte{0, 0, 0, 1, 0, 0, 0, 0}), protocol.PerspectiveClient, "version_information available version 0"},
		{"version_information length 6", tpRaw(0x11, []byte{0, 0, 0, 1, 0, 0}), protocol.PerspectiveClient, "version_information length not a positive multiple of 4"},
		{"version_information empty", tpRaw(0x11, nil), protocol.PerspectiveServer, "version_information length"},
		{"invalid role", nil, 0, "invalid sender role"},
	}
	for _, tt := range tests {
		var p TransportParameters
		err := p.Unmarshal(tt.b, tt.sender)
		var te *qerr.TransportError
		if !errors.As(err, &te) || te.Code != qerr.TransportParameterError || !strings.Contains(te.Reason, tt.reason) {
			t.Errorf("%s: err = %v, want TRANSPORT_PARAMETER_ERROR containing %q", tt.name, err, tt.reason)
		}
	}
}

func TestTransportParametersMarshalErrors(t *testing.T) {
	server := fullServerParams()
	if _, err := server.Marshal(nil, protocol.PerspectiveClient); err == nil || !strings.Contains(err.Error(), "original_destination_connection_id sent by a client") {
		t.Errorf("client marshalling server-only parameters: %v", err)
	}
	for name, mangle := range map[string]func(p *TransportParameters){
		"ack_delay_exponent":   func(p *TransportParameters) { p.AckDelayExponent = 21 },
		"max_ack_delay":        func(p *TransportParameters) { p.MaxAckDelay = 20 * time.Second },
		"max_udp_payload_size": func(p *TransportParameters) { p.MaxUDPPayloadSize = 1000 },
		"preferred_address":    func(p *TransportParameters) { p.PreferredAddress.ConnectionID = nil },
		"max_idle_timeout":     func(p *TransportParameters) { p.MaxIdleTimeout = -time.Second },
	} {
		p := fullServerParams()
		mangle(&p)
		b, err := p.Marshal([]byte{0xee}, protocol.PerspectiveServer)
		if err == nil || !strings.Contains(err.Error(), name) || len(b) != 1 {
			t.Errorf("%s: err %v, output %x", name, err, b)
		}
	}
	// A preferred address with unset families encodes as zeros.
	p := fullServerParams()
	p.PreferredAddress.IPv4 = netip.AddrPort{}
	b, err := p.Marshal(nil, protocol.PerspectiveServer)
	if err != nil {
		t.Fatal(err)
	}
	var got TransportParameters
	if err := got.Unmarshal(b, protocol.PerspectiveServer); err != nil || got.PreferredAddress.IPv4 != netip.MustParseAddrPort("0.0.0.0:0") {
		t.Errorf("unset IPv4: %v %v", got.PreferredAddress, err)
	}
}
