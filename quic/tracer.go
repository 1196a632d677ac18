package quic

import (
	"net"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/qlog"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic/quictype"
)

// connTracer is a connection's qlog recorder, for Config.Tracer and
// Config.Qlog (quic-go's event model, package qlog). Its hooks run with the lock held,
// each behind `if c.trace != nil`, so a connection without a Tracer builds
// nothing; they queue the events, which run records without the lock.
type connTracer struct {
	// out queues the events for Config.Tracer's Recorder, which run
	// hands them to without mu (callbackOutbox).
	out   *callbackOutbox
	state int // index of the last ConnectionState recorded in connStates
	// checksum is that of the datagram being processed.
	checksum qlog.DatagramPayloadChecksum
	frame    wire.Frame // scratch for parsing the frames of a packet
	metrics  qlog.MetricsUpdated
	mtu      int  // the largest datagram size recorded
	mtuDone  bool // the end of the search was recorded
	// rxTuple and txTuple are the tuple IDs of the datagram being
	// processed and of the one being built ("": the path in use;
	// path_tuples.go); tuples numbers a server's other peer addresses.
	rxTuple, txTuple string
	tuples           map[netip.AddrPort]string
	tuplesNext       int
}

// connStates are the states a connection goes through, in order.
var connStates = [...]qlog.ConnectionState{
	"",
	qlog.ConnectionStateAttempted,
	qlog.ConnectionStateHandshakeStarted,
	qlog.ConnectionStateHandshakeComplete,
	qlog.ConnectionStateHandshakeConfirmed,
	qlog.ConnectionStateClosed,
}

// startRecorders asks Config.Tracer for the connection's trace, and
// Config.Qlog for a writer to record the same events into (qlogTrace);
// it runs once the ODCID is known, before the first packet is sent or
// processed.
func (c *Conn) startRecorders() {
	if c.qlogTrace != nil {
		return
	}
	var t qlogwriter.Trace
	if c.config.Tracer != nil {
		t = c.config.Tracer(c.ctx, c.isClient, ConnectionIDFromBytes(c.cids.origDest))
	}
	if c.config.Qlog != nil {
		t = joinTraces(t, qlogTrace(c.config.Qlog, c.isClient, c.cids.origDest))
	}
	if t == nil {
		return
	}
	c.qlogTrace = t
	r := t.AddProducer()
	if r == nil {
		return
	}
	c.out.recorder = r
	c.out.recorderClosed = make(chan struct{})
	c.traceEnded = c.out.recorderClosed
	c.trace = &connTracer{out: &c.out, mtu: c.send.maxDatagram}
	c.trace.record(qlog.StartedConnection{
		Local:  tupleEndpoint(c.t.Conn.LocalAddr()),
		Remote: tupleEndpoint(c.path.remote),
	})
	c.trace.connState(qlog.ConnectionStateAttempted)
}

// QlogTrace returns the connection's qlog trace (Config.Tracer's, joined
// with Config.Qlog's), or nil: other layers (HTTP/3) add their events to it with
// AddProducer, which returns nil once the trace has ended.
func (c *Conn) QlogTrace() qlogwriter.Trace {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.qlogTrace
}

func tupleEndpoint(a net.Addr) qlog.TupleEndpointInfo {
	ap, ok := addrPort(a)
	if !ok {
		return qlog.TupleEndpointInfo{}
	}
	return tupleEndpointAP(ap)
}

func tupleEndpointAP(ap netip.AddrPort) qlog.TupleEndpointInfo {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if ap.Addr().Is4() {
		return qlog.TupleEndpointInfo{IPv4: ap}
	}
	return qlog.TupleEndpointInfo{IPv6: ap}
}

// connState records a connection state, once, and only forward; t may
// be nil.
func (t *connTracer) connState(s qlog.ConnectionState) {
	if t == nil {
		return
	}
	for i := t.state + 1; i < len(connStates); i++ {
		if connStates[i] == s {
			t.state = i
			t.record(qlog.ConnectionStateUpdated{State: s})
			return
		}
	}
}

// closed records how the connection ended; the recorder stays open for a
// CONNECTION_CLOSE being sent (end closes it). t may be nil.
func (t *connTracer) closed(err error) {
	if t == nil || t.state == len(connStates)-1 {
		return
	}
	var ev qlog.ConnectionClosed
	initiator := func(remote bool) qlog.Initiator {
		if remote {
			return qlog.InitiatorRemote
		}
		return qlog.InitiatorLocal
	}
	switch e := err.(type) {
	case *ApplicationError:
		code := e.ErrorCode
		ev = qlog.ConnectionClosed{Initiator: initiator(e.Remote), ApplicationError: &code, Reason: e.ErrorMessage}
	case *TransportError:
		code := e.ErrorCode
		ev = qlog.ConnectionClosed{Initiator: initiator(e.Remote), ConnectionError: &code, Reason: e.ErrorMessage}
	case *IdleTimeoutError, *HandshakeTimeoutError:
		ev = qlog.ConnectionClosed{Initiator: qlog.InitiatorLocal, Trigger: qlog.ConnectionCloseTriggerIdleTimeout}
	case *StatelessResetError:
		ev = qlog.ConnectionClosed{Initiator: qlog.InitiatorRemote, Trigger: qlog.ConnectionCloseTriggerStatelessReset}
	case *VersionNegotiationError:
		ev = qlog.ConnectionClosed{Initiator: qlog.InitiatorLocal, Trigger: qlog.ConnectionCloseTriggerVersionMismatch}
	default:
		ev = qlog.ConnectionClosed{Initiator: qlog.InitiatorLocal}
	}
	t.record(ev)
	t.connState(qlog.ConnectionStateClosed)
}

// end records how the connection closed (closeErr, unless nil) and has
// the recorder closed after the events queued (callbackOutbox); the
// connection drops t then. t may be nil.
func (t *connTracer) end(closeErr error) {
	if t == nil {
		return
	}
	if closeErr != nil {
		t.closed(closeErr)
	}
	t.out.closeRecorder = true
}

// record queues ev for the recorder.
func (t *connTracer) record(ev qlogwriter.Event) { t.out.record(ev) }

func tracePacketType(pt wire.PacketType) qlog.PacketType {
	switch pt {
	case wire.PacketTypeInitial:
		return qlog.PacketTypeInitial
	case wire.PacketTypeHandshake:
		return qlog.PacketTypeHandshake
	case wire.PacketType0RTT:
		return qlog.PacketType0RTT
	case wire.PacketTypeRetry:
		return qlog.PacketTypeRetry
	}
	return qlog.PacketType1RTT
}

func keyPhaseBit(firstByte byte) qlog.KeyPhaseBit {
	if firstByte&0x04 != 0 {
		return qlog.KeyPhaseOne
	}
	return qlog.KeyPhaseZero
}

// tracePacketSent records a packet of buf from its plaintext: the caller
// runs it after padding, before sealing.
func (c *Conn) tracePacketSent(buf []byte, p *packetInfo) {
	t := c.trace
	hdr := qlog.PacketHeader{PacketNumber: qlog.PacketNumber(p.pn)}
	pkt := buf[p.start:p.payloadEnd]
	if p.lengthPos < 0 {
		hdr.PacketType = qlog.PacketType1RTT
		// Sealing sets the bit, after this record.
		hdr.KeyPhaseBit = qlog.KeyPhaseZero
		if c.keys.app != nil && c.keys.app.KeyPhase() {
			hdr.KeyPhaseBit = qlog.KeyPhaseOne
		}
		hdr.DestConnectionID = ConnectionIDFromBytes(pkt[1 : p.pnOffset-p.start])
	} else {
		var lh wire.LongHeader
		// The length field is final, so the header parses as received.
		if err := wire.ParseLongHeader(buf[p.start:p.payloadEnd+tagLen], &lh); err == nil {
			hdr.PacketType = tracePacketType(lh.Type)
			hdr.Version = lh.Version
			hdr.SrcConnectionID = ConnectionIDFromBytes(lh.SrcConnID)
			hdr.DestConnectionID = ConnectionIDFromBytes(lh.DestConnID)
			if lh.Type == wire.PacketTypeInitial {
				hdr.Token = &qlog.Token{Raw: append([]byte(nil), lh.Token...)}
			}
		}
	}
	payload := buf[p.pnOffset+p.pnLen : p.payloadEnd]
	ecn := qlog.ECNUnsupported
	if c.t.ecn {
		ecn = qlog.ECN(c.send.ecn.String())
	}
	t.record(qlog.PacketSent{
		Header:           hdr,
		Raw:              qlog.RawInfo{Length: p.payloadEnd + tagLen - p.start, PayloadLength: len(payload)},
		Frames:           t.frames(payload, wire.DefaultAckDelayExponent, hdr.PacketType),
		ECN:              ecn,
		IsMTUProbePacket: p.mtuProbe,
		Tuple:            t.txTuple,
	})
}

// datagram notes the checksum of a received datagram for the packet
// events of its packets.
func (t *connTracer) datagram(p *receivedPacket) {
	if p.checksum != 0 {
		t.checksum = p.checksum // a kept packet, processed later
		return
	}
	t.checksum = qlog.CalculateDatagramPayloadChecksum(p.data)
}

// packetReceived records a decrypted packet of size bytes; lh is its long
// header, or nil for a 1-RTT packet (then pkt[0] has the key phase bit
// without header protection, dcid the connection ID). peerAckExp is the
// peer's ack_delay_exponent, which 1-RTT ACK frames use.
func (t *connTracer) packetReceived(pt wire.PacketType, pn uint64, lh *wire.LongHeader, pkt, dcid []byte, payload []byte, ecn protocol.ECN, peerAckExp uint8) {
	hdr := qlog.PacketHeader{PacketType: tracePacketType(pt), PacketNumber: qlog.PacketNumber(pn)}
	if lh != nil {
		hdr.Version = lh.Version
		hdr.SrcConnectionID = ConnectionIDFromBytes(lh.SrcConnID)
		hdr.DestConnectionID = ConnectionIDFromBytes(lh.DestConnID)
		if pt == wire.PacketTypeInitial {
			hdr.Token = &qlog.Token{Raw: append([]byte(nil), lh.Token...)}
		}
	} else {
		hdr.KeyPhaseBit = keyPhaseBit(pkt[0])
		hdr.DestConnectionID = ConnectionIDFromBytes(dcid)
	}
	exp := uint8(wire.DefaultAckDelayExponent)
	if pt == wire.PacketType1RTT {
		exp = peerAckExp
	}
	t.record(qlog.PacketReceived{
		Header:                  hdr,
		Raw:                     qlog.RawInfo{Length: len(pkt), PayloadLength: len(payload)},
		DatagramPayloadChecksum: t.checksum,
		Frames:                  t.frames(payload, exp, hdr.PacketType),
		ECN:                     qlog.ECN(ecn.String()),
		Tuple:                   t.rxTuple,
	})
}

// buffered records a packet kept until its keys arrive.
func (t *connTracer) buffered(pkt []byte) {
	hdr := qlog.PacketHeader{PacketType: qlog.PacketType1RTT, PacketNumber: quictype.InvalidPacketNumber}
	if wire.IsLongHeader(pkt[0]) {
		var lh wire.LongHeader
		if err := wire.ParseLongHeader(pkt, &lh); err == nil {
			hdr.PacketType = tracePacketType(lh.Type)
			hdr.Version = lh.Version
			hdr.SrcConnectionID = ConnectionIDFromBytes(lh.SrcConnID)
			hdr.DestConnectionID = ConnectionIDFromBytes(lh.DestConnID)
		}
	}
	t.record(qlog.PacketBuffered{
		Header:                  hdr,
		Raw:                     qlog.RawInfo{Length: len(pkt), PayloadLength: qlog.OmitLength},
		DatagramPayloadChecksum: t.checksum,
	})
}

// frames converts a plaintext payload into qlog frames (PADDING is left
// out, as quic-go does); a frame that does not parse ends the list.
func (t *connTracer) frames(payload []byte, ackExp uint8, pt qlog.PacketType) []qlog.Frame {
	var out []qlog.Frame
	f := &t.frame
	for len(payload) > 0 {
		n, err := wire.ParseFrame(payload, f)
		if err != nil || n <= 0 {
			break
		}
		payload = payload[n:]
		if fr := traceFrame(f, ackExp); fr != nil {
			out = append(out, qlog.Frame{Frame: fr})
		}
	}
	return out
}

func traceStreamType(bidi bool) quictype.StreamType {
	if bidi {
		return quictype.StreamTypeBidi
	}
	return quictype.StreamTypeUni
}

// traceFrame returns the qlog form of f, nil for PADDING.
func traceFrame(f *wire.Frame, ackExp uint8) any {
	switch f.Type {
	case wire.FrameTypePadding:
		return nil
	case wire.FrameTypePing:
		return &qlog.PingFrame{}
	case wire.FrameTypeAck, wire.FrameTypeAckECN:
		a := &qlog.AckFrame{AckRanges: make([]qlog.AckRange, len(f.AckRanges))}
		for i, r := range f.AckRanges {
			a.AckRanges[i] = qlog.AckRange{Smallest: qlog.PacketNumber(r.Smallest), Largest: qlog.PacketNumber(r.Largest)}
		}
		if f.AckDelay < 1<<40 {
			a.DelayTime = time.Duration(f.AckDelay<<ackExp) * time.Microsecond
		}
		a.ECT0, a.ECT1, a.ECNCE = f.ECT0, f.ECT1, f.ECNCE
		return a
	case wire.FrameTypeResetStream:
		return &qlog.ResetStreamFrame{StreamID: StreamID(f.StreamID), ErrorCode: StreamErrorCode(f.ErrorCode), FinalSize: qlog.ByteCount(f.FinalSize)}
	case wire.FrameTypeResetStreamAt:
		// qlog tells RESET_STREAM_AT by a non-zero ReliableSize, as
		// quic-go's; one with a reliable size of 0 shows as reset_stream.
		return &qlog.ResetStreamFrame{StreamID: StreamID(f.StreamID), ErrorCode: StreamErrorCode(f.ErrorCode),
			FinalSize: qlog.ByteCount(f.FinalSize), ReliableSize: qlog.ByteCount(f.ReliableSize)}
	case wire.FrameTypeStopSending:
		return &qlog.StopSendingFrame{StreamID: StreamID(f.StreamID), ErrorCode: StreamErrorCode(f.ErrorCode)}
	case wire.FrameTypeCrypto:
		return &qlog.CryptoFrame{Offset: int64(f.Offset), Length: int64(len(f.Data))}
	case wire.FrameTypeNewToken:
		return &qlog.NewTokenFrame{Token: append([]byte(nil), f.Token...)}
	case wire.FrameTypeStream:
		return &qlog.StreamFrame{StreamID: StreamID(f.StreamID), Offset: int64(f.Offset), Length: int64(len(f.Data)), Fin: f.Fin}
	case wire.FrameTypeMaxData:
		return &qlog.MaxDataFrame{MaximumData: qlog.ByteCount(f.Limit)}
	case wire.FrameTypeMaxStreamData:
		return &qlog.MaxStreamDataFrame{StreamID: StreamID(f.StreamID), MaximumStreamData: qlog.ByteCount(f.Limit)}
	case wire.FrameTypeMaxStreamsBidi, wire.FrameTypeMaxStreamsUni:
		return &qlog.MaxStreamsFrame{Type: traceStreamType(f.Type == wire.FrameTypeMaxStreamsBidi), MaxStreamNum: quictype.StreamNum(f.Limit)}
	case wire.FrameTypeDataBlocked:
		return &qlog.DataBlockedFrame{MaximumData: qlog.ByteCount(f.Limit)}
	case wire.FrameTypeStreamDataBlocked:
		return &qlog.StreamDataBlockedFrame{StreamID: StreamID(f.StreamID), MaximumStreamData: qlog.ByteCount(f.Limit)}
	case wire.FrameTypeStreamsBlockedBidi, wire.FrameTypeStreamsBlockedUni:
		return &qlog.StreamsBlockedFrame{Type: traceStreamType(f.Type == wire.FrameTypeStreamsBlockedBidi), StreamLimit: quictype.StreamNum(f.Limit)}
	case wire.FrameTypeNewConnectionID:
		return &qlog.NewConnectionIDFrame{
			SequenceNumber:      f.SequenceNumber,
			RetirePriorTo:       f.RetirePriorTo,
			ConnectionID:        ConnectionIDFromBytes(f.ConnectionID),
			StatelessResetToken: f.StatelessResetToken,
		}
	case wire.FrameTypeRetireConnectionID:
		return &qlog.RetireConnectionIDFrame{SequenceNumber: f.SequenceNumber}
	case wire.FrameTypePathChallenge:
		return &qlog.PathChallengeFrame{Data: f.PathData}
	case wire.FrameTypePathResponse:
		return &qlog.PathResponseFrame{Data: f.PathData}
	case wire.FrameTypeConnectionClose, wire.FrameTypeConnectionCloseApp:
		return &qlog.ConnectionCloseFrame{
			IsApplicationError: f.Type == wire.FrameTypeConnectionCloseApp,
			ErrorCode:          f.ErrorCode,
			FrameType:          f.TriggerFrameType,
			ReasonPhrase:       string(f.Reason),
		}
	case wire.FrameTypeHandshakeDone:
		return &qlog.HandshakeDoneFrame{}
	case wire.FrameTypeDatagram:
		return &qlog.DatagramFrame{Length: int64(len(f.Data))}
	}
	return nil
}

// lost records the packets in loss.events.Lost; it runs before
// onPacketLost forgets their space.
func (t *connTracer) lost(loss *lossState) {
	for _, lp := range loss.events.Lost {
		pt := qlog.PacketType1RTT
		mtuProbe := false
		if sp := loss.sent.get(lp.Handle); sp != nil {
			switch sp.space {
			case spaceInitial:
				pt = qlog.PacketTypeInitial
			case spaceHandshake:
				pt = qlog.PacketTypeHandshake
			}
			for _, f := range sp.frames {
				mtuProbe = mtuProbe || f.kind == sfMTUProbe
			}
		}
		t.record(qlog.PacketLost{
			Header:           qlog.PacketHeader{PacketType: pt, PacketNumber: qlog.PacketNumber(lp.Number)},
			IsMTUProbePacket: mtuProbe,
		})
	}
}

// traceMetrics records recovery:metrics_updated when a figure changed: the
// RTTs that changed, and the congestion window and bytes in flight.
func (c *Conn) traceMetrics() {
	t := c.trace
	if t.state == len(connStates)-1 {
		// Closed: only our CONNECTION_CLOSE follows connection_closed,
		// not the figures its sending changed.
		return
	}
	rtt := c.loss.rec.RTT()
	now := qlog.MetricsUpdated{
		CongestionWindow: c.loss.rec.Controller().CongestionWindow(),
		BytesInFlight:    c.loss.rec.BytesInFlight(),
	}
	if rtt.HasSample() {
		now.MinRTT, now.SmoothedRTT, now.LatestRTT, now.RTTVariance = rtt.MinRTT(), rtt.SmoothedRTT(), rtt.LatestRTT(), rtt.RTTVar()
	}
	if now == t.metrics {
		return
	}
	ev := now
	old := t.metrics
	t.metrics = now
	if ev.MinRTT == old.MinRTT {
		ev.MinRTT = 0
	}
	if ev.SmoothedRTT == old.SmoothedRTT {
		ev.SmoothedRTT = 0
	}
	if ev.LatestRTT == old.LatestRTT {
		ev.LatestRTT = 0
	}
	if ev.RTTVariance == old.RTTVariance {
		ev.RTTVariance = 0
	}
	t.record(ev)
}

// params records transport:parameters_set for our parameters (local) or
// the peer's.
func (t *connTracer) params(isClient, local bool, p *wire.TransportParameters) {
	ev := qlog.ParametersSet{
		Initiator:                      qlog.InitiatorRemote,
		DisableActiveMigration:         p.DisableActiveMigration,
		MaxIdleTimeout:                 p.MaxIdleTimeout,
		MaxUDPPayloadSize:              qlog.ByteCount(p.MaxUDPPayloadSize),
		AckDelayExponent:               uint8(p.AckDelayExponent),
		MaxAckDelay:                    p.MaxAckDelay,
		ActiveConnectionIDLimit:        p.ActiveConnectionIDLimit,
		InitialMaxData:                 qlog.ByteCount(p.InitialMaxData),
		InitialMaxStreamDataBidiLocal:  qlog.ByteCount(p.InitialMaxStreamDataBidiLocal),
		InitialMaxStreamDataBidiRemote: qlog.ByteCount(p.InitialMaxStreamDataBidiRemote),
		InitialMaxStreamDataUni:        qlog.ByteCount(p.InitialMaxStreamDataUni),
		InitialMaxStreamsBidi:          int64(p.InitialMaxStreamsBidi),
		InitialMaxStreamsUni:           int64(p.InitialMaxStreamsUni),
		MaxDatagramFrameSize:           quictype.InvalidByteCount,
	}
	if local {
		ev.Initiator = qlog.InitiatorLocal
	}
	ev.SentBy = PerspectiveServer
	if isClient == local {
		ev.SentBy = PerspectiveClient
	}
	if p.HasOriginalDestinationConnectionID {
		ev.OriginalDestinationConnectionID = ConnectionIDFromBytes(p.OriginalDestinationConnectionID)
	}
	if p.HasInitialSourceConnectionID {
		ev.InitialSourceConnectionID = ConnectionIDFromBytes(p.InitialSourceConnectionID)
	}
	if p.HasRetrySourceConnectionID {
		ev.RetrySourceConnectionID = ConnectionIDFromBytes(p.RetrySourceConnectionID)
	}
	if p.HasStatelessResetToken {
		tok := quictype.StatelessResetToken(p.StatelessResetToken)
		ev.StatelessResetToken = &tok
	}
	if p.MaxDatagramFrameSize > 0 {
		ev.MaxDatagramFrameSize = qlog.ByteCount(p.MaxDatagramFrameSize)
	}
	ev.EnableResetStreamAt = p.ResetStreamAt
	t.record(ev)
}

// mtuUpdated records recovery:mtu_updated when the datagram size grows.
func (t *connTracer) mtuUpdated(size int, done bool) {
	if t.mtuDone || (size <= t.mtu && !done) {
		return
	}
	t.mtu, t.mtuDone = max(t.mtu, size), done
	t.record(qlog.MTUUpdated{Value: size, Done: done})
}

// keyUpdate records a 1-RTT key update.
func (t *connTracer) keyUpdate(remote bool, phase uint64) {
	trigger := qlog.KeyUpdateLocal
	if remote {
		trigger = qlog.KeyUpdateRemote
	}
	for _, kt := range [2]qlog.KeyType{qlog.KeyTypeClient1RTT, qlog.KeyTypeServer1RTT} {
		t.record(qlog.KeyUpdated{Trigger: trigger, KeyType: kt, KeyPhase: qlog.KeyPhase(phase)})
	}
}
