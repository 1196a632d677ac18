package stateless

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// openAsClient reads a stateless close as the client does: an Initial
// protected with the keys of the DCID its Initial carried (dcid).
func openAsClient(t *testing.T, pkt []byte, v wire.Version, dcid []byte) (*wire.LongHeader, *wire.Frame) {
	t.Helper()
	var h wire.LongHeader
	if err := wire.ParseLongHeader(pkt, &h); err != nil {
		t.Fatal(err)
	}
	if h.Type != wire.PacketTypeInitial || h.Version != v || h.PacketLen != len(pkt) {
		t.Fatalf("close is %v %v, %d of %d bytes", h.Type, h.Version, h.PacketLen, len(pkt))
	}
	_, opener, err := handshake.NewInitialKeys(dcid, v, true)
	if err != nil {
		t.Fatal(err)
	}
	payload, pn, err := opener.UnprotectPacket(bytes.Clone(pkt), h.PNOffset, -1)
	if err != nil {
		t.Fatalf("the client cannot open the close: %v", err)
	}
	if pn != 0 {
		t.Fatalf("packet number %d", pn)
	}
	var f wire.Frame
	n, err := wire.ParseFrame(payload, &f)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(payload) {
		t.Fatalf("%d bytes after the frame", len(payload)-n)
	}
	return &h, &f
}

// TestCloseDecryptsAsClient: INVALID_TOKEN (RFC 9000 section 8.1.3) and
// CONNECTION_REFUSED, v1 and v2, also after a Retry (a 4-byte DCID the
// server chose), open with the client's Initial keys and carry the code.
func TestCloseDecryptsAsClient(t *testing.T) {
	r := mustNew(t)
	for _, v := range []wire.Version{wire.Version1, wire.Version2} {
		for _, dcid := range [][]byte{rfcODCID, {9, 8, 7, 6}} {
			for _, code := range []qerr.TransportErrorCode{qerr.InvalidToken, qerr.ConnectionRefused} {
				pkt := initialDatagram(t, v, dcid, cscid, []byte("a retry token"), 1200)
				h := examineInitial(t, r, pkt)
				out := make([]byte, 0, MaxCloseLen)
				b, err := r.AppendClose(out, h, &qerr.TransportError{Code: code})
				if err != nil {
					t.Fatal(err)
				}
				ch, f := openAsClient(t, b, v, dcid)
				if !bytes.Equal(ch.DestConnID, cscid) || !bytes.Equal(ch.SrcConnID, dcid) || len(ch.Token) != 0 {
					t.Fatalf("close to %x from %x, token %x", ch.DestConnID, ch.SrcConnID, ch.Token)
				}
				if f.Type != wire.FrameTypeConnectionClose || f.ErrorCode != uint64(code) || f.TriggerFrameType != 0 || len(f.Reason) != 0 {
					t.Fatalf("frame %v code %#x frame type %#x reason %q, want CONNECTION_CLOSE %v", f.Type, f.ErrorCode, f.TriggerFrameType, f.Reason, code)
				}
				// Smaller than the client's datagram by far: no amplification.
				if len(b) > 100 {
					t.Fatalf("close of %d bytes", len(b))
				}
				// With another DCID's keys it does not open.
				_, wrong, _ := handshake.NewInitialKeys(rfcSCID, v, true)
				if _, _, err := wrong.UnprotectPacket(bytes.Clone(b), ch.PNOffset, -1); err == nil {
					t.Fatal("close opens with the keys of another DCID")
				}
			}
		}
	}
}

func TestCloseReasonAndBuffer(t *testing.T) {
	r := mustNew(t)
	h := examineInitial(t, r, initialDatagram(t, wire.Version1, rfcODCID, cscid, nil, 1200))
	long := strings.Repeat("r", 200)
	b, err := r.AppendClose([]byte("prefix"), h, &qerr.TransportError{Code: qerr.ProtocolViolation, FrameType: 0x06, Reason: long})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("prefix")) {
		t.Fatal("prefix lost")
	}
	if len(b)-6 > MaxCloseLen {
		t.Fatalf("close of %d bytes over MaxCloseLen %d", len(b)-6, MaxCloseLen)
	}
	_, f := openAsClient(t, b[6:], wire.Version1, rfcODCID)
	if string(f.Reason) != long[:MaxCloseReasonLen] || f.TriggerFrameType != 0x06 || f.ErrorCode != uint64(qerr.ProtocolViolation) {
		t.Fatalf("frame %+v", f)
	}

	hs := *h
	hs.Type = wire.PacketType0RTT
	other := *h
	other.Version = 0x1a2a3a4a
	for _, tc := range []struct {
		h    *wire.LongHeader
		e    *qerr.TransportError
		want error
	}{
		{&hs, &qerr.TransportError{Code: qerr.InvalidToken}, ErrNotInitial},
		{&other, &qerr.TransportError{Code: qerr.InvalidToken}, ErrVersion},
		{h, &qerr.TransportError{Code: 1 << 62}, ErrCloseCode},
		{h, &qerr.TransportError{Code: qerr.InvalidToken, FrameType: 1 << 63}, ErrCloseCode},
	} {
		if b, err := r.AppendClose([]byte("x"), tc.h, tc.e); !errors.Is(err, tc.want) || string(b) != "x" {
			t.Errorf("%+v: %q, %v, want %v", tc.e, b, err, tc.want)
		}
	}
}

// TestCloseLongestFits: the longest close is MaxCloseLen bytes.
func TestCloseLongestFits(t *testing.T) {
	r := mustNew(t)
	dcid, scid := bytes.Repeat([]byte{1}, 20), bytes.Repeat([]byte{2}, 20)
	h := examineInitial(t, r, initialDatagram(t, wire.Version1, dcid, scid, nil, 1200))
	e := &qerr.TransportError{Code: wire.MaxVarint, FrameType: wire.MaxVarint, Reason: strings.Repeat("x", MaxCloseReasonLen)}
	b, err := r.AppendClose(nil, h, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != MaxCloseLen {
		t.Fatalf("longest close %d bytes, MaxCloseLen %d", len(b), MaxCloseLen)
	}
}
