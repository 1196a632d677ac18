package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/turboretry/turboretry/internal/qerr"
)

// frameEqual compares frames treating nil and empty slices alike.
func frameEqual(a, b *Frame) bool {
	norm := func(f Frame) Frame {
		for _, s := range []*[]byte{&f.Data, &f.ConnectionID, &f.Reason, &f.Token} {
			if len(*s) == 0 {
				*s = nil
			}
		}
		if len(f.AckRanges) == 0 {
			f.AckRanges = nil
		}
		return f
	}
	return reflect.DeepEqual(norm(*a), norm(*b))
}

// testFrames has one or more frames of every type ParseFrame knows.
var testFrames = []Frame{
	{Type: FrameTypePadding, PaddingLen: 1},
	{Type: FrameTypePadding, PaddingLen: 37},
	{Type: FrameTypePing},
	{Type: FrameTypeAck, AckDelay: 20, AckRanges: []AckRange{{Smallest: 0, Largest: 0}}},
	{Type: FrameTypeAck, AckDelay: 1 << 20, AckRanges: []AckRange{{100, 200}, {50, 98}, {10, 10}, {0, 8}}},
	{Type: FrameTypeAckECN, AckDelay: 3, AckRanges: []AckRange{{1 << 40, 1<<40 + 5}}, ECT0: 10, ECT1: 1 << 33, ECNCE: 2},
	{Type: FrameTypeResetStream, StreamID: 4, ErrorCode: 0x10c, FinalSize: 1 << 50},
	{Type: FrameTypeResetStreamAt, StreamID: 4, ErrorCode: 0x10c, FinalSize: 1 << 50, ReliableSize: 3},
	{Type: FrameTypeResetStreamAt, StreamID: 1<<62 - 1, ErrorCode: 0, FinalSize: 70000, ReliableSize: 70000},
	{Type: FrameTypeResetStreamAt, StreamID: 2, ErrorCode: 1, FinalSize: 9, ReliableSize: 0},
	{Type: FrameTypeStopSending, StreamID: 1<<62 - 1, ErrorCode: 7},
	{Type: FrameTypeCrypto, Offset: 0, Data: []byte("client hello")},
	{Type: FrameTypeCrypto, Offset: 16384, Data: nil},
	{Type: FrameTypeNewToken, Token: []byte("a NEW_TOKEN token")},
	{Type: FrameTypeStream, StreamID: 0, Data: []byte("GET /"), HasLength: true},
	{Type: FrameTypeStream, StreamID: 8, Offset: 1000, Data: []byte("tail of packet"), Fin: true},
	{Type: FrameTypeStream, StreamID: 3, Offset: 1, Fin: true, HasLength: true},
	{Type: FrameTypeStream, StreamID: 7},
	{Type: FrameTypeMaxData, Limit: 1 << 30},
	{Type: FrameTypeMaxStreamData, StreamID: 2, Limit: 65536},
	{Type: FrameTypeMaxStreamsBidi, Limit: 100},
	{Type: FrameTypeMaxStreamsUni, Limit: MaxStreamCount},
	{Type: FrameTypeDataBlocked, Limit: 12345},
	{Type: FrameTypeStreamDataBlocked, StreamID: 6, Limit: 99},
	{Type: FrameTypeStreamsBlockedBidi, Limit: 0},
	{Type: FrameTypeStreamsBlockedUni, Limit: 77},
	{Type: FrameTypeNewConnectionID, SequenceNumber: 5, RetirePriorTo: 5, ConnectionID: []byte{1, 2, 3, 4, 5, 6, 7, 8},
		StatelessResetToken: [16]byte{0xaa, 15: 0xbb}},
	{Type: FrameTypeNewConnectionID, SequenceNumber: 1, ConnectionID: bytes.Repeat([]byte{9}, 20)},
	{Type: FrameTypeRetireConnectionID, SequenceNumber: 3},
	{Type: FrameTypePathChallenge, PathData: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}},
	{Type: FrameTypePathResponse, PathData: [8]byte{8, 7, 6, 5, 4, 3, 2, 1}},
	{Type: FrameTypeConnectionClose, ErrorCode: uint64(qerr.FrameEncodingError), TriggerFrameType: 0x08, Reason: []byte("bad")},
	{Type: FrameTypeConnectionCloseApp, ErrorCode: 0x100, Reason: nil},
	{Type: FrameTypeHandshakeDone},
	{Type: FrameTypeDatagram, Data: []byte("unreliable"), HasLength: true},
	{Type: FrameTypeDatagram, Data: []byte("to the end")},
}

func TestFrameRoundTrip(t *testing.T) {
	var got Frame
	for _, f := range testFrames {
		b := AppendFrame([]byte{}, &f)
		if n := FrameLen(&f); n != len(b) {
			t.Errorf("%s: FrameLen %d, appended %d bytes", f.Type, n, len(b))
		}
		n, err := ParseFrame(b, &got)
		if err != nil {
			t.Errorf("%s: %v (%x)", f.Type, err, b)
			continue
		}
		if n != len(b) || !frameEqual(&got, &f) {
			t.Errorf("%s: parsed %d of %d bytes: %+v, want %+v", f.Type, n, len(b), got, f)
		}
		// Frames with a length parse the same with trailing bytes; frames
		// running to the end of the packet (and PADDING) do not.
		if f.Type == FrameTypePadding || (f.Type == FrameTypeStream || f.Type == FrameTypeDatagram) && !f.HasLength {
			continue
		}
		if n, err := ParseFrame(append(b, 0x01, 0x01), &got); err != nil || n != len(b) || !frameEqual(&got, &f) {
			t.Errorf("%s with trailing bytes: n %d, %v", f.Type, n, err)
		}
	}
}

func TestFramePacketRoundTrip(t *testing.T) {
	// All frames in one payload, reusing one Frame (and its AckRanges).
	var b []byte
	want := 0
	for i := range testFrames {
		f := testFrames[i]
		if f.Type == FrameTypePadding || (f.Type == FrameTypeStream || f.Type == FrameTypeDatagram) && !f.HasLength {
			continue
		}
		b = AppendFrame(b, &f)
		want++
	}
	var f Frame
	var count int
	for len(b) > 0 {
		n, err := ParseFrame(b, &f)
		if err != nil {
			t.Fatalf("frame %d: %v", count, err)
		}
		b = b[n:]
		count++
	}
	if count != want {
		t.Errorf("parsed %d frames", count)
	}
}

func TestStreamFrameTypeBits(t *testing.T) {
	var f Frame
	for typ := byte(0x08); typ <= 0x0f; typ++ {
		b := []byte{typ, 0x04}
		if typ&streamFlagOff != 0 {
			b = append(b, 0x40, 0x10) // offset 16 in two bytes
		}
		if typ&streamFlagLen != 0 {
			b = append(b, 3)
		}
		b = append(b, 'a', 'b', 'c')
		n, err := ParseFrame(b, &f)
		if err != nil || n != len(b) {
			t.Fatalf("type %#x: %d, %v", typ, n, err)
		}
		wantOff := uint64(0)
		if typ&streamFlagOff != 0 {
			wantOff = 16
		}
		if f.Type != FrameTypeStream || f.StreamID != 4 || f.Offset != wantOff || string(f.Data) != "abc" ||
			f.Fin != (typ&1 != 0) || f.HasLength != (typ&2 != 0) {
			t.Errorf("type %#x: %+v", typ, f)
		}
		if f.Type.String() != "STREAM" || FrameType(typ).String() != "STREAM" {
			t.Errorf("type %#x name", typ)
		}
	}
}

func TestAckFrameRanges(t *testing.T) {
	// Largest 100, delay 0, 2 ranges: first 10 -> [90,100]; gap 3 -> largest
	// 90-3-2=85, len 5 -> [80,85]; gap 0 -> 78, len 60 -> [18,78].
	b := []byte{0x02, 0x40, 100, 0, 2, 10, 3, 5, 0, 60}
	f := Frame{AckRanges: make([]AckRange, 0, 8)}
	backing := &f.AckRanges[:1][0]
	if _, err := ParseFrame(b, &f); err != nil {
		t.Fatal(err)
	}
	want := []AckRange{{90, 100}, {80, 85}, {18, 78}}
	if !reflect.DeepEqual(f.AckRanges, want) {
		t.Errorf("ranges %v, want %v", f.AckRanges, want)
	}
	if &f.AckRanges[0] != backing {
		t.Error("ParseFrame did not reuse the caller's AckRanges array")
	}
	if got := AppendAckFrame(nil, want, 0); !bytes.Equal(got, b) {
		t.Errorf("AppendAckFrame = %x", got)
	}
	var total uint64
	for _, r := range f.AckRanges {
		total += r.Len()
	}
	if total != 11+6+61 {
		t.Errorf("ranges cover %d packets", total)
	}
}

func TestAppendAckPanicsOnBadRanges(t *testing.T) {
	for name, ranges := range map[string][]AckRange{
		"empty":     nil,
		"adjacent":  {{7, 9}, {5, 6}},
		"ascending": {{1, 2}, {5, 6}},
		"inverted":  {{9, 7}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			AppendAckFrame(nil, ranges, 0)
		}()
	}
}

func TestFrameErrors(t *testing.T) {
	tests := []struct {
		name string
		b    string
		code qerr.TransportErrorCode
		typ  uint64
	}{
		{"empty", "", qerr.FrameEncodingError, 0},
		{"unknown type", "1f", qerr.FrameEncodingError, 0},
		{"unknown 2-byte type", "4020", qerr.FrameEncodingError, 0},
		{"non-minimal PING", "4001", qerr.ProtocolViolation, 1},
		{"truncated 2-byte type", "40", qerr.FrameEncodingError, 0},
		{"ACK first range underflow", "02050006", qerr.FrameEncodingError, 2},
		{"ACK gap underflow", "020a00010900", qerr.FrameEncodingError, 2},
		{"ACK range length underflow", "030a0001020007" + "000000", qerr.FrameEncodingError, 3},
		{"ACK truncated", "020a0001", qerr.FrameEncodingError, 2},
		{"ACK huge range count", "020a00ff00", qerr.FrameEncodingError, 2},
		{"ACK_ECN missing counts", "030a00000001", qerr.FrameEncodingError, 3},
		{"RESET_STREAM truncated", "040102", qerr.FrameEncodingError, 4},
		{"RESET_STREAM_AT truncated", "24010203", qerr.FrameEncodingError, 0x24},
		{"RESET_STREAM_AT reliable above final", "2401020304", qerr.FrameEncodingError, 0x24},
		{"non-minimal RESET_STREAM_AT", "402401020302", qerr.ProtocolViolation, 0x24},
		{"STOP_SENDING truncated", "0501", qerr.FrameEncodingError, 5},
		{"CRYPTO beyond 2^62-1", "06ffffffffffffffff01aa", qerr.FrameEncodingError, 6},
		{"CRYPTO data truncated", "060005aabb", qerr.FrameEncodingError, 6},
		{"NEW_TOKEN empty", "0700", qerr.FrameEncodingError, 7},
		{"NEW_TOKEN truncated", "0703aa", qerr.FrameEncodingError, 7},
		{"STREAM beyond 2^62-1", "0c00ffffffffffffffffaa", qerr.FrameEncodingError, 0x0c},
		{"STREAM length beyond packet", "0a0005aabb", qerr.FrameEncodingError, 0x0a},
		{"STREAM truncated id", "08", qerr.FrameEncodingError, 0x08},
		{"MAX_DATA truncated", "10", qerr.FrameEncodingError, 0x10},
		{"MAX_STREAMS above 2^60", "12d000000000000001", qerr.FrameEncodingError, 0x12},
		{"STREAMS_BLOCKED above 2^60", "17d000000000000001", qerr.FrameEncodingError, 0x17},
		{"NEW_CONNECTION_ID length 0", "18010000" + "00000000000000000000000000000000", qerr.FrameEncodingError, 0x18},
		{"NEW_CONNECTION_ID length 21", "180100150000000000000000000000000000000000000000000000000000000000000000000000", qerr.FrameEncodingError, 0x18},
		{"NEW_CONNECTION_ID retire > seq", "18010201aa00000000000000000000000000000000", qerr.FrameEncodingError, 0x18},
		{"NEW_CONNECTION_ID truncated token", "18010001aa0000", qerr.FrameEncodingError, 0x18},
		{"PATH_CHALLENGE truncated", "1a01020304050607", qerr.FrameEncodingError, 0x1a},
		{"CONNECTION_CLOSE reason truncated", "1c070805616263", qerr.FrameEncodingError, 0x1c},
		{"CONNECTION_CLOSE_APP truncated", "1d07", qerr.FrameEncodingError, 0x1d},
		{"DATAGRAM length beyond packet", "3102aa", qerr.FrameEncodingError, 0x31},
	}
	for _, tt := range tests {
		var f Frame
		_, err := ParseFrame(mustHex(t, tt.b), &f)
		var te *qerr.TransportError
		if !errors.As(err, &te) {
			t.Errorf("%s: err = %v, want a transport error", tt.name, err)
			continue
		}
		if te.Code != tt.code || te.FrameType != tt.typ {
			t.Errorf("%s: got %v, want %s for frame %#x", tt.name, err, tt.code, tt.typ)
		}
	}
}

// TestResetStreamAtEncoding checks the draft's layout field by field: type
// 0x24, then stream ID, error code, final size and reliable size, each a
// varint, and that a reliable size equal to the final size is accepted.
func TestResetStreamAtEncoding(t *testing.T) {
	f := Frame{Type: FrameTypeResetStreamAt, StreamID: 4, ErrorCode: 0x10c, FinalSize: 100, ReliableSize: 100}
	b := AppendFrame(nil, &f)
	if want := "2404410c40644064"; hex.EncodeToString(b) != want {
		t.Fatalf("encoded %x, want %s", b, want)
	}
	var got Frame
	if n, err := ParseFrame(b, &got); err != nil || n != len(b) || !frameEqual(&got, &f) {
		t.Fatalf("parsed %d bytes, %v: %+v", n, err, got)
	}
	if FrameTypeResetStreamAt.String() != "RESET_STREAM_AT" || !FrameTypeResetStreamAt.IsAckEliciting() {
		t.Error("RESET_STREAM_AT name or ack-eliciting wrong")
	}
	if FrameType(0x23).String() != "0x23" || FrameType(0x23).IsKnown() {
		t.Error("types next to RESET_STREAM_AT became known")
	}
}

func TestStreamOffsetLimitAccepted(t *testing.T) {
	// Offset + length exactly 2^62-1 is allowed.
	b := AppendStreamFrame(nil, 0, MaxVarint-3, []byte{1, 2, 3}, true, true)
	var f Frame
	if _, err := ParseFrame(b, &f); err != nil {
		t.Errorf("offset+len = 2^62-1 rejected: %v", err)
	}
}

func TestFrameAllowedIn(t *testing.T) {
	initialOK := map[FrameType]bool{FrameTypePadding: true, FrameTypePing: true, FrameTypeAck: true,
		FrameTypeAckECN: true, FrameTypeCrypto: true, FrameTypeConnectionClose: true}
	zeroRTTBanned := map[FrameType]bool{FrameTypeAck: true, FrameTypeAckECN: true, FrameTypeCrypto: true,
		FrameTypeHandshakeDone: true, FrameTypeNewToken: true, FrameTypePathResponse: true,
		FrameTypeRetireConnectionID: true}
	for typ := FrameType(0); typ <= 0x40; typ++ {
		known := typ.IsKnown()
		if got := typ.AllowedIn(PacketTypeInitial); got != initialOK[typ] {
			t.Errorf("%s in Initial: %v", typ, got)
		}
		if got := typ.AllowedIn(PacketTypeHandshake); got != initialOK[typ] {
			t.Errorf("%s in Handshake: %v", typ, got)
		}
		if got := typ.AllowedIn(PacketType0RTT); got != (known && !zeroRTTBanned[typ]) {
			t.Errorf("%s in 0-RTT: %v", typ, got)
		}
		if got := typ.AllowedIn(PacketType1RTT); got != known {
			t.Errorf("%s in 1-RTT: %v", typ, got)
		}
		if typ.AllowedIn(PacketTypeRetry) {
			t.Errorf("%s allowed in Retry", typ)
		}
	}
	for _, typ := range []FrameType{0x0b, FrameTypeDatagram, FrameTypeDatagramWithLen, FrameTypeConnectionCloseApp} {
		if typ.AllowedIn(PacketTypeInitial) || !typ.AllowedIn(PacketType0RTT) {
			t.Errorf("%s: wrong Initial/0-RTT permission", typ)
		}
	}
}

func TestFrameAckEliciting(t *testing.T) {
	for typ := FrameType(0); typ <= FrameTypeDatagramWithLen; typ++ {
		if !typ.IsKnown() {
			continue
		}
		want := typ != FrameTypePadding && typ != FrameTypeAck && typ != FrameTypeAckECN &&
			typ != FrameTypeConnectionClose && typ != FrameTypeConnectionCloseApp
		if typ.IsAckEliciting() != want {
			t.Errorf("%s ack-eliciting = %v", typ, !want)
		}
	}
	if !FrameTypePathChallenge.IsProbing() || FrameTypeStream.IsProbing() {
		t.Error("IsProbing wrong")
	}
}

func TestMaxDataLenFits(t *testing.T) {
	for _, id := range []uint64{0, 100, 1 << 20} {
		for _, off := range []uint64{0, 60, 1 << 35} {
			for space := 0; space < 17000; space += 7 {
				for _, withLen := range []bool{false, true} {
					n := MaxStreamDataLen(id, off, space, withLen)
					if n > 0 && StreamFrameLen(id, off, n, withLen) > space {
						t.Fatalf("id %d off %d space %d: %d bytes do not fit", id, off, space, n)
					}
					// One more byte must not fit.
					if StreamFrameLen(id, off, n+1, withLen) <= space {
						t.Fatalf("id %d off %d space %d len %v: %d is not the maximum", id, off, space, withLen, n)
					}
				}
			}
		}
	}
	for space := 0; space < 17000; space++ {
		if n := MaxCryptoDataLen(1000, space); (n > 0 && CryptoFrameLen(1000, n) > space) || CryptoFrameLen(1000, n+1) <= space {
			t.Fatalf("crypto space %d: %d", space, n)
		}
		if n := MaxDatagramDataLen(space, true); (n > 0 && DatagramFrameLen(n, true) > space) || DatagramFrameLen(n+1, true) <= space {
			t.Fatalf("datagram space %d: %d", space, n)
		}
	}
	if n := MaxStreamDataLen(0, MaxVarint-10, 1500, true); n != 10 {
		t.Errorf("near the offset limit: %d, want 10", n)
	}
}

func TestFrameHeaderBuildersMatchWholeFrames(t *testing.T) {
	data := []byte("header-only builders")
	for _, off := range []uint64{0, 1, 1 << 20} {
		for _, fin := range []bool{false, true} {
			for _, withLen := range []bool{false, true} {
				whole := AppendStreamFrame(nil, 4, off, data, fin, withLen)
				split := append(AppendStreamFrameHeader(nil, 4, off, len(data), fin, withLen), data...)
				if !bytes.Equal(whole, split) {
					t.Fatalf("stream off=%d fin=%v len=%v: %x != %x", off, fin, withLen, split, whole)
				}
			}
		}
		whole := AppendCryptoFrame(nil, off, data)
		split := append(AppendCryptoFrameHeader(nil, off, len(data)), data...)
		if !bytes.Equal(whole, split) {
			t.Fatalf("crypto off=%d: %x != %x", off, split, whole)
		}
	}
}
