package quic

import (
	"errors"
	"net"
	"net/netip"

	"github.com/turboretry/turboretry/internal/udpio"
)

// writeDatagrams sends the datagrams one run of the event loop built, in
// one sendmmsg call where the socket allows (internal/udpio), else one
// WriteTo each. Send errors count as packet loss. Called by run only.
func (c *Conn) writeDatagrams(writes []outDatagram, sendT *Transport) {
	if len(writes) == 0 {
		return
	}
	defer func() {
		for _, d := range writes {
			if d.pooled {
				putSendBuffer(d.b)
			}
		}
	}()
	ap, ok := addrPort(c.remote)
	if (len(writes) == 1 && writes[0].ecn == udpio.ECNNotECT) || !ok || anyElsewhere(writes) {
		c.writeEach(writes, sendT)
		return
	}
	b := sendT.getSendBatch()
	defer sendT.sendBatches.Put(b)
	if b.w == nil {
		c.writeEach(writes, sendT)
		return
	}
	msgs := b.msgs[:0]
	if sendT.gso {
		msgs = b.gsoMessages(msgs, writes, ap)
	} else {
		for _, d := range writes {
			msgs = append(msgs, udpio.Message{Buf: d.b, Addr: ap, ECN: d.ecn})
		}
	}
	for rest := msgs; len(rest) > 0; {
		n, err := b.w.WriteBatch(rest)
		if err == nil {
			break
		}
		if n >= len(rest) || isClosedErr(err) {
			break
		}
		rest = rest[n+1:] // drop the datagram that failed, as a loss
	}
	clear(msgs)
	b.msgs = msgs[:0]
}

// writeEach sends the datagrams one WriteTo each.
func (c *Conn) writeEach(writes []outDatagram, sendT *Transport) {
	for _, d := range writes {
		to, via := d.to, d.via
		if to == nil {
			to = c.remote
		}
		if via == nil {
			via = sendT
		}
		via.write(d.b, to)
	}
}

// sendBatch is what one batched write needs: the socket's batching writer,
// its messages and the GSO buffer. A Transport pools them, so a
// connection holds none between writes and an idle one costs nothing here.
type sendBatch struct {
	w      *udpio.Writer // nil: the socket takes no batches
	msgs   []udpio.Message
	gsoBuf []byte
}

// getSendBatch takes a sendBatch from the Transport's pool; put it back
// into t.sendBatches after the write.
func (t *Transport) getSendBatch() *sendBatch {
	if b, ok := t.sendBatches.Get().(*sendBatch); ok {
		return b
	}
	return &sendBatch{w: t.newWriter()}
}

// gsoMessages groups runs of equal-size datagrams (the last of a run may be
// shorter) into one UDP GSO buffer each, copied into b.gsoBuf.
func (b *sendBatch) gsoMessages(msgs []udpio.Message, writes []outDatagram, ap netip.AddrPort) []udpio.Message {
	total := 0
	for _, d := range writes {
		total += len(d.b)
	}
	if cap(b.gsoBuf) < total {
		b.gsoBuf = make([]byte, 0, total)
	}
	buf := b.gsoBuf[:0]
	for i := 0; i < len(writes); {
		size := len(writes[i].b)
		j := i + 1
		for j < len(writes) && j-i < maxGSOSegments {
			l := len(writes[j].b)
			if l > size || writes[j].ecn != writes[i].ecn {
				break // one GSO buffer has one size and one ECN mark
			}
			j++
			if l < size {
				break // a shorter datagram ends the run
			}
		}
		if j-i == 1 {
			msgs = append(msgs, udpio.Message{Buf: writes[i].b, Addr: ap, ECN: writes[i].ecn})
			i = j
			continue
		}
		start := len(buf)
		for _, d := range writes[i:j] {
			buf = append(buf, d.b...)
		}
		msgs = append(msgs, udpio.Message{Buf: buf[start:], Addr: ap, SegmentSize: size, ECN: writes[i].ecn})
		i = j
	}
	return msgs
}

// maxGSOSegments bounds a GSO buffer to udpio's limit and 64 KiB.
const maxGSOSegments = min(udpio.MaxGSOSegments, 65000/sendBufferSize)

// newWriter returns a batching writer for the Transport's socket, or nil
// when it is not a *net.UDPConn (wrappers, tests) or the platform refuses.
func (t *Transport) newWriter() *udpio.Writer {
	uc, ok := t.Conn.(*net.UDPConn)
	if !ok {
		return nil
	}
	w, err := udpio.NewWriter(uc, udpio.WriterConfig{Batch: maxDatagramsPerRun, GSO: t.gso})
	if err != nil {
		return nil
	}
	return w
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ua.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.IsValid()
}

func isClosedErr(err error) bool { return errors.Is(err, net.ErrClosed) }

// anyElsewhere reports whether a datagram goes to an address other than
// the peer's current one (a PATH_RESPONSE to a probe) or leaves from
// another socket (a client's PATH_CHALLENGE on a new path): rare enough to
// send that batch one datagram at a time.
func anyElsewhere(writes []outDatagram) bool {
	for _, d := range writes {
		if d.to != nil || d.via != nil {
			return true
		}
	}
	return false
}
