package quic

import (
	"net"
	"strconv"

	"github.com/turboretry/turboretry/internal/wire"
)

// Event builders for draft-ietf-quic-qlog-quic-events. Each is called from
// a hook behind `if c.qlog != nil`, with the connection lock held, so a
// connection without qlog builds nothing.

func qlogPacketType(space int, early bool) string {
	switch {
	case space == spaceInitial:
		return "initial"
	case space == spaceHandshake:
		return "handshake"
	case early:
		return "0RTT"
	}
	return "1RTT"
}

func qlogPacketTypeOf(pt wire.PacketType) string {
	switch pt {
	case wire.PacketTypeInitial:
		return "initial"
	case wire.PacketTypeHandshake:
		return "handshake"
	case wire.PacketType0RTT:
		return "0RTT"
	}
	return "1RTT"
}

// appendAddr appends the ip and port fields of a UDP address.
func appendAddr(b []byte, prefix string, a net.Addr) []byte {
	ap, ok := addrPort(a)
	if !ok {
		if a != nil {
			b = fieldString(b, prefix+"ip", a.String())
		}
		return b
	}
	b = fieldString(b, prefix+"ip", ap.Addr().String())
	return fieldUint(b, prefix+"port", uint64(ap.Port()))
}

// connectionStarted writes transport:connection_started for a connection
// from local to remote with the connection IDs src and dst.
func (q *qlogger) connectionStarted(local, remote net.Addr, src, dst []byte) {
	if q.failed {
		return
	}
	b := q.event("transport:connection_started")
	ipv := "ipv4"
	if ap, ok := addrPort(remote); ok && ap.Addr().Is6() {
		ipv = "ipv6"
	}
	b = fieldRaw(b, "ip_version", ipv)
	b = appendAddr(b, "src_", local)
	b = appendAddr(b, "dst_", remote)
	b = fieldHex(b, "src_cid", src)
	b = fieldHex(b, "dst_cid", dst)
	q.end(b)
}

// params writes transport:parameters_set; owner is "local" or "remote".
func (q *qlogger) params(owner string, p *wire.TransportParameters) {
	if q.failed {
		return
	}
	b := q.event("transport:parameters_set")
	b = fieldRaw(b, "owner", owner)
	if p.HasOriginalDestinationConnectionID {
		b = fieldHex(b, "original_destination_connection_id", p.OriginalDestinationConnectionID)
	}
	if p.HasInitialSourceConnectionID {
		b = fieldHex(b, "initial_source_connection_id", p.InitialSourceConnectionID)
	}
	if p.HasRetrySourceConnectionID {
		b = fieldHex(b, "retry_source_connection_id", p.RetrySourceConnectionID)
	}
	if p.HasStatelessResetToken {
		b = fieldHex(b, "stateless_reset_token", p.StatelessResetToken[:])
	}
	b = fieldBool(b, "disable_active_migration", p.DisableActiveMigration)
	b = fieldInt(b, "max_idle_timeout", p.MaxIdleTimeout.Milliseconds())
	b = fieldUint(b, "max_udp_payload_size", p.MaxUDPPayloadSize)
	b = fieldUint(b, "ack_delay_exponent", uint64(p.AckDelayExponent))
	b = fieldInt(b, "max_ack_delay", p.MaxAckDelay.Milliseconds())
	b = fieldUint(b, "active_connection_id_limit", p.ActiveConnectionIDLimit)
	b = fieldUint(b, "initial_max_data", p.InitialMaxData)
	b = fieldUint(b, "initial_max_stream_data_bidi_local", p.InitialMaxStreamDataBidiLocal)
	b = fieldUint(b, "initial_max_stream_data_bidi_remote", p.InitialMaxStreamDataBidiRemote)
	b = fieldUint(b, "initial_max_stream_data_uni", p.InitialMaxStreamDataUni)
	b = fieldUint(b, "initial_max_streams_bidi", p.InitialMaxStreamsBidi)
	b = fieldUint(b, "initial_max_streams_uni", p.InitialMaxStreamsUni)
	if p.MaxDatagramFrameSize > 0 {
		b = fieldUint(b, "max_datagram_frame_size", p.MaxDatagramFrameSize)
	}
	if p.ResetStreamAt {
		b = fieldBool(b, "reset_stream_at", true)
	}
	q.end(b)
}

// qlogPacketSent writes transport:packet_sent for a packet of buf, from
// its plaintext: the caller runs it after padding, before sealing.
func (c *Conn) qlogPacketSent(buf []byte, p *packetInfo) {
	q := c.qlog
	if q.failed {
		return
	}
	var dcid []byte
	if p.lengthPos < 0 {
		// Short header: the DCID runs from byte 1 to the packet number.
		dcid = buf[p.start+1 : p.pnOffset]
	} else if n := int(buf[p.start+5]); p.start+6+n <= len(buf) {
		dcid = buf[p.start+6 : p.start+6+n]
	}
	b := q.event("transport:packet_sent")
	b = appendQlogHeader(b, qlogPacketType(p.space, p.early), p.pn, dcid)
	b = field(b, "raw")
	b = fieldUint(append(b, '{'), "length", uint64(p.payloadEnd+tagLen-p.start))
	b = append(b, '}')
	b = q.appendFrames(b, buf[p.pnOffset+p.pnLen:p.payloadEnd], wire.DefaultAckDelayExponent)
	q.end(b)
}

// packetReceived writes transport:packet_received for a decrypted packet
// of size bytes on the wire; peerAckExp scales the ACK delays of 1-RTT.
func (q *qlogger) packetReceived(pt wire.PacketType, pn uint64, dcid []byte, size int, payload []byte, peerAckExp uint8) {
	if q.failed {
		return
	}
	exp := uint8(wire.DefaultAckDelayExponent)
	if pt == wire.PacketType1RTT {
		exp = peerAckExp
	}
	b := q.event("transport:packet_received")
	b = appendQlogHeader(b, qlogPacketTypeOf(pt), pn, dcid)
	b = field(b, "raw")
	b = fieldUint(append(b, '{'), "length", uint64(size))
	b = append(b, '}')
	b = q.appendFrames(b, payload, exp)
	q.end(b)
}

func appendQlogHeader(b []byte, pt string, pn uint64, dcid []byte) []byte {
	b = field(b, "header")
	b = append(b, '{')
	b = fieldRaw(b, "packet_type", pt)
	b = fieldUint(b, "packet_number", pn)
	if dcid != nil {
		b = fieldHex(b, "dcid", dcid)
	}
	return append(b, '}')
}

// lost writes recovery:packet_lost for the packets in loss.events.Lost;
// it runs before onPacketLost forgets their space.
func (q *qlogger) lost(loss *lossState) {
	for _, lp := range loss.events.Lost {
		if q.failed {
			return
		}
		b := q.event("recovery:packet_lost")
		b = field(b, "header")
		b = append(b, '{')
		if sp := loss.sent[lp.Handle]; sp != nil {
			b = fieldRaw(b, "packet_type", qlogPacketType(sp.space, false))
		}
		b = fieldUint(b, "packet_number", lp.Number)
		b = append(b, '}')
		b = fieldInt(b, "length", int64(lp.Size))
		q.end(b)
	}
}

// qlogMetrics writes recovery:metrics_updated with the values that
// changed since the last one, if any.
func (c *Conn) qlogMetrics() {
	q := c.qlog
	if q.failed {
		return
	}
	rtt := c.loss.rec.RTT()
	m := qlogMetrics{
		minRTT:      rtt.MinRTT(),
		smoothedRTT: rtt.SmoothedRTT(),
		latestRTT:   rtt.LatestRTT(),
		rttVar:      rtt.RTTVar(),
		cwnd:        c.loss.rec.Controller().CongestionWindow(),
		inFlight:    c.loss.rec.BytesInFlight(),
	}
	old, all := q.metrics, !q.haveMetrics
	if !all && m == old {
		return
	}
	q.metrics, q.haveMetrics = m, true
	b := q.event("recovery:metrics_updated")
	if rtt.HasSample() {
		if all || m.minRTT != old.minRTT {
			b = fieldMs(b, "min_rtt", m.minRTT)
		}
		if all || m.smoothedRTT != old.smoothedRTT {
			b = fieldMs(b, "smoothed_rtt", m.smoothedRTT)
		}
		if all || m.latestRTT != old.latestRTT {
			b = fieldMs(b, "latest_rtt", m.latestRTT)
		}
		if all || m.rttVar != old.rttVar {
			b = fieldMs(b, "rtt_variance", m.rttVar)
		}
	}
	if all || m.cwnd != old.cwnd {
		b = fieldInt(b, "congestion_window", int64(m.cwnd))
	}
	if all || m.inFlight != old.inFlight {
		b = fieldInt(b, "bytes_in_flight", int64(m.inFlight))
	}
	q.end(b)
}

// pathUpdated writes connectivity:path_updated when the peer's address
// changes or its validation ends; state is "validating", "validated",
// "returned" or "failed"; remote is the peer's address, dcid the
// connection ID we send to.
func (q *qlogger) pathUpdated(state string, remote net.Addr, dcid []byte) {
	if q.failed {
		return
	}
	b := q.event("connectivity:path_updated")
	b = fieldRaw(b, "state", state)
	b = appendAddr(b, "dst_", remote)
	b = fieldHex(b, "dcid", dcid)
	q.end(b)
}

// closed records transport:connection_closed for err, the connection's
// close error, and hands q over to out to be closed; it runs at teardown.
// The connection drops q.
func (q *qlogger) closed(err error, out *callbackOutbox) {
	if !q.failed {
		b := q.event("transport:connection_closed")
		b = appendCloseFields(b, err)
		q.end(b)
	}
	out.qlogEnded = q // written out and closed without mu
}

func appendCloseFields(b []byte, err error) []byte {
	owner := func(remote bool) string {
		if remote {
			return "remote"
		}
		return "local"
	}
	switch e := err.(type) {
	case *ApplicationError:
		b = fieldRaw(b, "owner", owner(e.Remote))
		b = fieldUint(b, "application_code", uint64(e.ErrorCode))
		b = fieldString(b, "reason", e.ErrorMessage)
		trigger := "application"
		if e.ErrorCode == 0 && e.ErrorMessage == "" {
			trigger = "clean"
		}
		b = fieldRaw(b, "trigger", trigger)
	case *TransportError:
		b = fieldRaw(b, "owner", owner(e.Remote))
		b = fieldUint(b, "connection_code", uint64(e.ErrorCode))
		b = fieldString(b, "reason", e.ErrorMessage)
		trigger := "error"
		if e.ErrorCode == NoError {
			trigger = "clean"
		}
		b = fieldRaw(b, "trigger", trigger)
	case *IdleTimeoutError:
		b = fieldRaw(b, "owner", "local")
		b = fieldRaw(b, "trigger", "idle_timeout")
	case *HandshakeTimeoutError:
		b = fieldRaw(b, "owner", "local")
		b = fieldRaw(b, "trigger", "handshake_timeout")
	case *StatelessResetError:
		b = fieldRaw(b, "owner", "remote")
		b = fieldRaw(b, "trigger", "stateless_reset")
	case *VersionNegotiationError:
		b = fieldRaw(b, "owner", "local")
		b = fieldRaw(b, "trigger", "version_mismatch")
	default:
		b = fieldRaw(b, "owner", "local")
		b = fieldRaw(b, "trigger", "error")
		if err != nil {
			b = fieldString(b, "reason", err.Error())
		}
	}
	return b
}

// appendFrames appends the "frames" list of a packet's plaintext payload;
// ackExp scales ACK delays. A frame that does not parse ends the list.
func (q *qlogger) appendFrames(b, payload []byte, ackExp uint8) []byte {
	b = field(b, "frames")
	b = append(b, '[')
	f := &q.frame
	for first := true; len(payload) > 0; first = false {
		n, err := wire.ParseFrame(payload, f)
		if err != nil || n <= 0 {
			break
		}
		payload = payload[n:]
		if !first {
			b = append(b, ',')
		}
		b = appendQlogFrame(append(b, '{'), f, ackExp)
		b = append(b, '}')
	}
	return append(b, ']')
}

func streamType(bidi bool) string {
	if bidi {
		return "bidirectional"
	}
	return "unidirectional"
}

// appendQlogFrame appends the fields of one frame, in the quic-events
// draft's names.
func appendQlogFrame(b []byte, f *wire.Frame, ackExp uint8) []byte {
	switch f.Type {
	case wire.FrameTypePadding:
		b = fieldRaw(b, "frame_type", "padding")
		b = fieldInt(b, "length", int64(f.PaddingLen))
	case wire.FrameTypePing:
		b = fieldRaw(b, "frame_type", "ping")
	case wire.FrameTypeAck, wire.FrameTypeAckECN:
		b = fieldRaw(b, "frame_type", "ack")
		if f.AckDelay < 1<<40 {
			b = strconv.AppendFloat(field(b, "ack_delay"), float64(f.AckDelay<<ackExp)/1000, 'f', 3, 64)
		}
		b = field(b, "acked_ranges")
		b = append(b, '[')
		for i, r := range f.AckRanges {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendUint(b, r.Smallest, 10)
			if r.Largest != r.Smallest {
				b = append(b, ',')
				b = strconv.AppendUint(b, r.Largest, 10)
			}
			b = append(b, ']')
		}
		b = append(b, ']')
		if f.Type == wire.FrameTypeAckECN {
			b = fieldUint(b, "ect0", f.ECT0)
			b = fieldUint(b, "ect1", f.ECT1)
			b = fieldUint(b, "ce", f.ECNCE)
		}
	case wire.FrameTypeResetStream:
		b = fieldRaw(b, "frame_type", "reset_stream")
		b = fieldUint(b, "stream_id", f.StreamID)
		b = fieldUint(b, "error_code", f.ErrorCode)
		b = fieldUint(b, "final_size", f.FinalSize)
	case wire.FrameTypeResetStreamAt:
		b = fieldRaw(b, "frame_type", "reset_stream_at")
		b = fieldUint(b, "stream_id", f.StreamID)
		b = fieldUint(b, "error_code", f.ErrorCode)
		b = fieldUint(b, "final_size", f.FinalSize)
		b = fieldUint(b, "reliable_size", f.ReliableSize)
	case wire.FrameTypeStopSending:
		b = fieldRaw(b, "frame_type", "stop_sending")
		b = fieldUint(b, "stream_id", f.StreamID)
		b = fieldUint(b, "error_code", f.ErrorCode)
	case wire.FrameTypeCrypto:
		b = fieldRaw(b, "frame_type", "crypto")
		b = fieldUint(b, "offset", f.Offset)
		b = fieldInt(b, "length", int64(len(f.Data)))
	case wire.FrameTypeNewToken:
		b = fieldRaw(b, "frame_type", "new_token")
		b = field(b, "token")
		b = fieldInt(append(b, '{'), "length", int64(len(f.Token)))
		b = append(b, '}')
	case wire.FrameTypeStream:
		b = fieldRaw(b, "frame_type", "stream")
		b = fieldUint(b, "stream_id", f.StreamID)
		b = fieldUint(b, "offset", f.Offset)
		b = fieldInt(b, "length", int64(len(f.Data)))
		if f.Fin {
			b = fieldBool(b, "fin", true)
		}
	case wire.FrameTypeMaxData:
		b = fieldRaw(b, "frame_type", "max_data")
		b = fieldUint(b, "maximum", f.Limit)
	case wire.FrameTypeMaxStreamData:
		b = fieldRaw(b, "frame_type", "max_stream_data")
		b = fieldUint(b, "stream_id", f.StreamID)
		b = fieldUint(b, "maximum", f.Limit)
	case wire.FrameTypeMaxStreamsBidi, wire.FrameTypeMaxStreamsUni:
		b = fieldRaw(b, "frame_type", "max_streams")
		b = fieldRaw(b, "stream_type", streamType(f.Type == wire.FrameTypeMaxStreamsBidi))
		b = fieldUint(b, "maximum", f.Limit)
	case wire.FrameTypeDataBlocked:
		b = fieldRaw(b, "frame_type", "data_blocked")
		b = fieldUint(b, "limit", f.Limit)
	case wire.FrameTypeStreamDataBlocked:
		b = fieldRaw(b, "frame_type", "stream_data_blocked")
		b = fieldUint(b, "stream_id", f.StreamID)
		b = fieldUint(b, "limit", f.Limit)
	case wire.FrameTypeStreamsBlockedBidi, wire.FrameTypeStreamsBlockedUni:
		b = fieldRaw(b, "frame_type", "streams_blocked")
		b = fieldRaw(b, "stream_type", streamType(f.Type == wire.FrameTypeStreamsBlockedBidi))
		b = fieldUint(b, "limit", f.Limit)
	case wire.FrameTypeNewConnectionID:
		b = fieldRaw(b, "frame_type", "new_connection_id")
		b = fieldUint(b, "sequence_number", f.SequenceNumber)
		b = fieldUint(b, "retire_prior_to", f.RetirePriorTo)
		b = fieldInt(b, "connection_id_length", int64(len(f.ConnectionID)))
		b = fieldHex(b, "connection_id", f.ConnectionID)
		b = fieldHex(b, "stateless_reset_token", f.StatelessResetToken[:])
	case wire.FrameTypeRetireConnectionID:
		b = fieldRaw(b, "frame_type", "retire_connection_id")
		b = fieldUint(b, "sequence_number", f.SequenceNumber)
	case wire.FrameTypePathChallenge:
		b = fieldRaw(b, "frame_type", "path_challenge")
		b = fieldHex(b, "data", f.PathData[:])
	case wire.FrameTypePathResponse:
		b = fieldRaw(b, "frame_type", "path_response")
		b = fieldHex(b, "data", f.PathData[:])
	case wire.FrameTypeConnectionClose, wire.FrameTypeConnectionCloseApp:
		b = fieldRaw(b, "frame_type", "connection_close")
		if f.Type == wire.FrameTypeConnectionCloseApp {
			b = fieldRaw(b, "error_space", "application")
		} else {
			b = fieldRaw(b, "error_space", "transport")
		}
		b = fieldUint(b, "error_code", f.ErrorCode)
		b = fieldString(b, "reason", string(f.Reason))
		if f.Type == wire.FrameTypeConnectionClose {
			b = fieldUint(b, "trigger_frame_type", f.TriggerFrameType)
		}
	case wire.FrameTypeHandshakeDone:
		b = fieldRaw(b, "frame_type", "handshake_done")
	case wire.FrameTypeDatagram:
		b = fieldRaw(b, "frame_type", "datagram")
		b = fieldInt(b, "length", int64(len(f.Data)))
	default:
		b = fieldRaw(b, "frame_type", "unknown")
		b = fieldUint(b, "raw_frame_type", uint64(f.Type))
	}
	return b
}
