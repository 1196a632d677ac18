package quic

import (
	"cmp"
	"slices"
)

// Stream priorities (RFC 9218 urgency and incremental), as quic-go
// schedules them: lower urgency first; within an urgency, non-incremental
// streams one after the other in stream ID order, then incremental ones
// round robin. The default is urgency 3, incremental (RFC 9218 says
// non-incremental; quic-go and we keep round robin as the default).
const (
	defaultUrgency = 3
	maxUrgency     = 7
)

func (s *stream) setPriority(urgency int8, incremental bool) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	s.urgency = min(max(urgency, 0), maxUrgency)
	s.nonIncr = !incremental
	if s.urgency != defaultUrgency || s.nonIncr {
		c.streams.prioritized = true
	}
}

// wantsToSend reports whether the stream still belongs in the send list.
func (s *stream) wantsToSend() bool {
	if s.sendErr != nil {
		return s.resetReliable > 0 && s.send.HasData() // RESET_STREAM_AT's reliable data
	}
	return s.send.HasData() || (s.limited != nil && !s.limited.done)
}

// compareSchedule orders streams for sending: urgency, then
// non-incremental before incremental, non-incremental ones by ID.
// Incremental ones compare equal, so a stable sort keeps their round-robin
// order from the send list.
func compareSchedule(a, b *stream) int {
	if c := cmp.Compare(a.urgency, b.urgency); c != 0 {
		return c
	}
	switch {
	case a.nonIncr && b.nonIncr:
		return cmp.Compare(a.id, b.id)
	case a.nonIncr:
		return -1
	case b.nonIncr:
		return 1
	}
	return 0
}

// appendStreamFramesByPriority fills the packet from the send list in
// priority order; incremental streams that sent move to the back of the
// list, so their urgency level is served round robin.
func (c *Conn) appendStreamFramesByPriority(b []byte, maxEnd int, p *sentPacket) []byte {
	order := append(c.streams.prioOrder[:0], c.streams.sendList...)
	slices.SortStableFunc(order, compareSchedule)
	for _, s := range order {
		if maxEnd-len(b) <= 16 {
			break
		}
		var added bool
		b, added = s.appendStreamFrame(b, maxEnd, p)
		done := !s.wantsToSend()
		if done || (added && !s.nonIncr) {
			i := slices.Index(c.streams.sendList, s)
			c.streams.sendList = slices.Delete(c.streams.sendList, i, i+1)
			if done {
				s.inSendList = false
			} else {
				c.streams.sendList = append(c.streams.sendList, s)
			}
		}
		if added && !done {
			break // the packet is full
		}
	}
	clear(order)
	c.streams.prioOrder = order[:0]
	return b
}
