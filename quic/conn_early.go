package quic

import (
	"crypto/tls"
	"encoding/binary"

	"github.com/turboretry/turboretry/internal/flowcontrol"
	"github.com/turboretry/turboretry/internal/handshake"
	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/wire"
)

// Server-side 0-RTT (RFC 9001 section 4.6). A server with Config.Allow0RTT
// issues session tickets that allow early data and remembers in them the
// flow-control limits it granted; on resumption it accepts the client's
// 0-RTT packets only if it still grants at least as much (RFC 9000 section
// 7.4.1), and reads them with the early keys until the handshake is
// confirmed. Everything else rejects early data in the TLS handshake, and
// the client sends again in 1-RTT.

// earlyData is the connection's 0-RTT state, both sides. Guarded by
// Conn.mu.
type earlyData struct {
	// opener (server) reads 0-RTT packets until the handshake is
	// confirmed; used says early data was accepted (either side).
	opener  *handshake.Opener
	used    bool
	packets uint64 // 0-RTT packets processed
	// sealer (client) seals 0-RTT packets until 1-RTT keys exist;
	// remembered holds the server limits of the resumed ticket; sent says
	// they were applied; rejected that the server refused.
	sealer     *handshake.Sealer
	remembered *wire.TransportParameters
	sent       bool
	rejected   bool
	// awaitingNext (client): 0-RTT was rejected and NextConnection not
	// called yet; Open* and Accept* fail with Err0RTTRejected.
	awaitingNext bool
	// dial (client): DialEarly or DialAddrEarly; plain Dial uses no 0-RTT
	// even with a ticket that allows it, as in quic-go.
	dial bool
}

// earlyLimitsLen is the size of the limits a ticket remembers: eight
// uint64, the flow-control and stream limits, max_datagram_frame_size and
// reset_stream_at (1 when advertised), which both ends must remember for
// 0-RTT (draft-ietf-quic-reliable-stream-reset section 3).
const earlyLimitsLen = 8 * 8

// earlyLimits encodes the limits a 0-RTT client may use from our params.
func earlyLimits(p *wire.TransportParameters) []byte {
	b := make([]byte, 0, earlyLimitsLen)
	for _, v := range []uint64{p.InitialMaxData, p.InitialMaxStreamDataBidiLocal, p.InitialMaxStreamDataBidiRemote,
		p.InitialMaxStreamDataUni, p.InitialMaxStreamsBidi, p.InitialMaxStreamsUni, p.MaxDatagramFrameSize, boolLimit(p.ResetStreamAt)} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

// boolLimit encodes a flag among the remembered limits: a server that
// turned it off since the ticket then has a smaller value, and refuses the
// early data.
func boolLimit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// ticketLimitsTag marks our entry in a server SessionState's Extra: the
// application's WrapSession may add entries of its own (quic-go's tests
// add one of 5000 bytes), which must not be taken for ours.
var ticketLimitsTag = []byte("turboretry limits v3")

// ticketOptions are the options of the session tickets a server sends.
func (c *Conn) ticketOptions() tls.QUICSessionTicketOptions {
	if !c.config.Allow0RTT {
		return tls.QUICSessionTicketOptions{}
	}
	e := append(append([]byte(nil), ticketLimitsTag...), earlyLimits(c.ourParams())...)
	return tls.QUICSessionTicketOptions{EarlyData: true, Extra: [][]byte{e}}
}

// onResumeSession decides, on the server, whether a resumed session may
// use 0-RTT: only with Allow0RTT and limits no smaller than the ticket's.
func (c *Conn) onResumeSession(s *tls.SessionState) {
	if c.isClient || s == nil || !s.EarlyData {
		return
	}
	ok := c.config.Allow0RTT
	if ok {
		now := earlyLimits(c.ourParams())
		ok = false
		for _, extra := range s.Extra {
			if len(extra) != len(ticketLimitsTag)+earlyLimitsLen || string(extra[:len(ticketLimitsTag)]) != string(ticketLimitsTag) {
				continue
			}
			extra = extra[len(ticketLimitsTag):]
			ok = true
			for i := 0; i < earlyLimitsLen; i += 8 {
				if binary.BigEndian.Uint64(extra[i:]) > binary.BigEndian.Uint64(now[i:]) {
					ok = false
				}
			}
		}
	}
	s.EarlyData = ok
}

// installEarlyKeys installs the server's 0-RTT read keys.
func (c *Conn) installEarlyKeys(ev tls.QUICEvent) error {
	if c.isClient {
		return nil
	}
	o, err := handshake.NewOpener(ev.Suite, ev.Data, c.chosenVersion())
	if err != nil {
		return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
	}
	c.early.opener = o
	c.early.used = true
	c.keys.retryLater = true
	return nil
}

// handle0RTTPacket processes a client's 0-RTT packet on the server. Its
// packet numbers share the application space with 1-RTT.
func (c *Conn) handle0RTTPacket(pkt []byte, hdr *wire.LongHeader, p receivedPacket) {
	if c.isClient || c.hs.confirmed {
		return
	}
	if c.early.opener == nil {
		// Before the ClientHello was processed the keys may still come;
		// after it (Handshake keys exist), early data was rejected.
		if c.spaces[spaceHandshake].sealer == nil {
			c.keys.keepUndecryptable(pkt, p, c.trace)
		}
		return
	}
	sp := &c.spaces[spaceApp]
	largest := int64(-1)
	if pn, ok := sp.tracker.LargestReceived(); ok {
		largest = int64(pn)
	}
	payload, pn, err := c.early.opener.UnprotectPacket(pkt, hdr.PNOffset, largest)
	if err != nil {
		return
	}
	if pkt[0]&0x0c != 0 {
		c.closeWithError(qerr.NewProtocolViolation(0, "reserved bits set"))
		return
	}
	if sp.tracker.IsDuplicate(pn) {
		return
	}
	c.early.packets++
	if c.trace != nil {
		c.trace.packetReceived(wire.PacketType0RTT, pn, hdr, pkt, nil, payload, p.ecn, c.hs.peerAckDelayExp)
	}
	c.processPayload(spaceApp, wire.PacketType0RTT, pn, payload, p.rcvTime)
}

// Client-side 0-RTT. With a session cache the client remembers the
// server's limits with each ticket (in SessionState.Extra, behind
// rememberedTag); resuming a ticket that allows early data, it applies
// them, installs the early keys, and DialEarly returns at once: streams
// opened now go out in 0-RTT packets. When the server rejects early data,
// those packets are never acknowledged, loss detection declares them lost,
// and their frames are sent again in 1-RTT: rejection costs time, not
// data.

// rememberedTag marks our entry in a client SessionState's Extra.
var rememberedTag = []byte("turboretry 0rtt v3")

// rememberParams appends the server's limits to a ticket to be stored.
func (c *Conn) rememberParams(s *tls.SessionState) {
	if c.hs.peerParams == nil {
		return
	}
	e := append(append([]byte(nil), rememberedTag...), earlyLimits(c.hs.peerParams)...)
	s.Extra = append(s.Extra, e)
}

// rememberedParams returns the limits stored with a ticket, or nil.
func rememberedParams(s *tls.SessionState) *wire.TransportParameters {
	for _, e := range s.Extra {
		if len(e) != len(rememberedTag)+earlyLimitsLen || string(e[:len(rememberedTag)]) != string(rememberedTag) {
			continue
		}
		e = e[len(rememberedTag):]
		u := func(i int) uint64 { return binary.BigEndian.Uint64(e[8*i:]) }
		p := wire.DefaultTransportParameters()
		p.InitialMaxData = u(0)
		p.InitialMaxStreamDataBidiLocal = u(1)
		p.InitialMaxStreamDataBidiRemote = u(2)
		p.InitialMaxStreamDataUni = u(3)
		p.InitialMaxStreamsBidi = u(4)
		p.InitialMaxStreamsUni = u(5)
		p.MaxDatagramFrameSize = u(6)
		p.ResetStreamAt = u(7) != 0
		return &p
	}
	return nil
}

// onClientResumeSession keeps the remembered limits of a ticket that
// allows early data, or refuses early data without them.
func (c *Conn) onClientResumeSession(s *tls.SessionState) {
	if s == nil || !s.EarlyData {
		return
	}
	if !c.early.dial {
		s.EarlyData = false
		return
	}
	if c.early.remembered = rememberedParams(s); c.early.remembered == nil {
		s.EarlyData = false
	}
}

// installEarlySealer starts 0-RTT on the client with the remembered
// limits.
func (c *Conn) installEarlySealer(ev tls.QUICEvent) error {
	if !c.isClient || c.early.remembered == nil {
		return nil
	}
	s, err := handshake.NewSealer(ev.Suite, ev.Data, c.chosenVersion())
	if err != nil {
		return qerr.NewTransportError(qerr.InternalError, 0, err.Error())
	}
	p := c.early.remembered
	c.early.sealer = s
	c.hs.peerParams = p
	c.datagrams.peerSupports, c.datagrams.peerMax = p.MaxDatagramFrameSize > 0, p.MaxDatagramFrameSize
	c.flow.send.Init(p.InitialMaxData)
	if err := c.streams.counts.SetPeerLimits(p.InitialMaxStreamsBidi, p.InitialMaxStreamsUni); err != nil {
		return flowError(err)
	}
	return nil
}

// applyParamsAfterEarly raises the limits used in 0-RTT to the server's
// real ones, keeping what was already consumed.
func (c *Conn) applyParamsAfterEarly(p *wire.TransportParameters) error {
	c.flow.send.OnMaxData(p.InitialMaxData)
	if _, err := c.streams.counts.Outgoing(flowcontrol.Bidi).OnMaxStreams(p.InitialMaxStreamsBidi); err != nil {
		return flowError(err)
	}
	if _, err := c.streams.counts.Outgoing(flowcontrol.Uni).OnMaxStreams(p.InitialMaxStreamsUni); err != nil {
		return flowError(err)
	}
	for id, s := range c.streams.all {
		if !s.hasSend {
			continue
		}
		limit := p.InitialMaxStreamDataBidiRemote
		if flowcontrol.DirectionOf(id) == flowcontrol.Uni {
			limit = p.InitialMaxStreamDataUni
		}
		s.fcSend.OnMaxStreamData(limit)
	}
	c.streams.wakeAllSenders() // writers held at the remembered limits may queue more
	return nil
}

// sendsEarly reports whether application data goes out in 0-RTT now.
func (c *Conn) sendsEarly() bool {
	return c.early.sealer != nil && (c.keys.app == nil || !c.keys.app.CanSend())
}
