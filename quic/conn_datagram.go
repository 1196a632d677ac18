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

// onDatagram queues a received DATAGRAM payload, dropping it when the
// application is not keeping up.
func (c *Conn) onDatagram(data []byte) {
	if len(c.datagramsIn) >= maxReceivedDatagrams {
		return
	}
	c.datagramsIn = append(c.datagramsIn, slices.Clone(data))
	broadcast(&c.datagramSig)
}

// datagramLimit is the largest DATAGRAM payload that fits in a 1-RTT
// packet (short header, maximal packet number) of the current datagram
// size, within the peer's max_datagram_frame_size.
func (c *Conn) datagramLimit() int {
	maxLen := wire.MaxDatagramDataLen(c.maxDatagram-1-len(c.destCID)-4-tagLen, true)
	if uint64(maxLen) > c.peerMaxDatagram {
		maxLen = int(c.peerMaxDatagram)
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
	if c.peerMaxDatagram == 0 {
		return errors.New("quic: the peer does not accept datagrams")
	}
	if maxLen := c.datagramLimit(); len(p) > maxLen {
		return &DatagramTooLargeError{MaxDatagramPayloadSize: int64(maxLen)}
	}
	for len(c.datagramsOut) >= maxQueuedDatagrams {
		c.waitLocked(waitChan(&c.datagramSendSig), nil, time.Time{})
		if c.close.err != nil {
			return c.close.err
		}
	}
	c.datagramsOut = append(c.datagramsOut, slices.Clone(p))
	c.wake()
	return nil
}

// ReceiveDatagram returns the next received DATAGRAM payload.
func (c *Conn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if len(c.datagramsIn) > 0 {
			d := c.datagramsIn[0]
			c.datagramsIn[0] = nil
			c.datagramsIn = c.datagramsIn[1:]
			return d, nil
		}
		if !c.config.EnableDatagrams {
			return nil, errors.New("quic: datagram support disabled")
		}
		if c.close.err != nil {
			return nil, c.close.err
		}
		if err := c.waitLockedCtx(ctx, waitChan(&c.datagramSig)); err != nil {
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
