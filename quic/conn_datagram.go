package quic

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/turboretry/turboretry/internal/wire"
)

// Datagram queues, quic-go's sizes: SendDatagram waits while 32 wait to
// be sent; received ones beyond 128 unread are dropped (datagrams are
// unreliable).
const (
	maxQueuedDatagrams   = 32
	maxReceivedDatagrams = 128
)

// maxDatagramFrameSize is the max_datagram_frame_size we announce with
// datagrams enabled: no DATAGRAM frame fits a packet anywhere near it.
const maxDatagramFrameSize = 65535

// datagramQueues is the connection's DATAGRAM frames (RFC 9221) both
// ways. Guarded by Conn.mu.
type datagramQueues struct {
	in      [][]byte      // received, not read yet
	out     [][]byte      // queued by SendDatagram, not sent yet
	sendSig chan struct{} // broadcast: room in out
	recvSig chan struct{} // broadcast: in grew
	// peerMax is the peer's max_datagram_frame_size; peerSupports says
	// it advertised one.
	peerMax      uint64
	peerSupports bool
}

// onReceived queues a received DATAGRAM payload, dropping it when the
// application is not keeping up.
func (d *datagramQueues) onReceived(data []byte) {
	if len(d.in) >= maxReceivedDatagrams {
		return
	}
	d.in = append(d.in, slices.Clone(data))
	broadcast(&d.recvSig)
}

// datagramLimit is the largest DATAGRAM payload that fits in a 1-RTT
// packet (short header, maximal packet number) of the current datagram
// size, within the peer's max_datagram_frame_size.
func (c *Conn) datagramLimit() int {
	maxLen := wire.MaxDatagramDataLen(c.send.maxDatagram-1-len(c.cids.dest)-4-tagLen, true)
	// The peer's max_datagram_frame_size counts the whole frame, type and
	// length included (RFC 9221 section 3). A value above any packet's
	// size limits nothing more.
	if c.datagrams.peerMax < maxDatagramFrameSize {
		maxLen = min(maxLen, wire.MaxDatagramDataLen(int(c.datagrams.peerMax), true))
	}
	return maxLen
}

// SendDatagram queues an unreliable DATAGRAM frame (RFC 9221) if the peer
// accepts them (as in quic-go, our own Config.EnableDatagrams is about
// receiving). p must fit in one packet of the current datagram size,
// which path MTU discovery raises; a queued datagram that no longer fits
// (the path shrank) is dropped. It waits while 32 datagrams wait to be
// sent (congestion control holds them back).
func (c *Conn) SendDatagram(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.close.err != nil {
		return c.close.err
	}
	if c.datagrams.peerMax == 0 {
		return errors.New("quic: the peer does not accept datagrams")
	}
	if maxLen := c.datagramLimit(); len(p) > maxLen {
		return &DatagramTooLargeError{MaxDatagramPayloadSize: int64(maxLen)}
	}
	for len(c.datagrams.out) >= maxQueuedDatagrams {
		c.waitLocked(context.Background(), waitChan(&c.datagrams.sendSig), nil, time.Time{})
		if c.close.err != nil {
			return c.close.err
		}
	}
	c.datagrams.out = append(c.datagrams.out, slices.Clone(p))
	c.wake()
	return nil
}

// ReceiveDatagram returns the next received DATAGRAM payload.
func (c *Conn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if len(c.datagrams.in) > 0 {
			d := c.datagrams.in[0]
			c.datagrams.in[0] = nil
			c.datagrams.in = c.datagrams.in[1:]
			return d, nil
		}
		if !c.config.EnableDatagrams {
			return nil, errors.New("quic: datagram support disabled")
		}
		if c.close.err != nil {
			return nil, c.close.err
		}
		if err := c.waitLocked(ctx, waitChan(&c.datagrams.recvSig), nil, time.Time{}); err != nil {
			return nil, err
		}
	}
}

// DatagramTooLargeError is returned by SendDatagram for a payload that does
// not fit in a packet.
type DatagramTooLargeError struct {
	MaxDatagramPayloadSize int64
}

// Error implements error.
func (e *DatagramTooLargeError) Error() string { return "DATAGRAM frame too large" }
