package quic

import (
	"sync"
	"time"
)

// A client's 0-RTT packets can overtake its first Initial (they leave right
// after it, and the network may reorder). Dropping them costs a
// retransmission after a PTO; like quic-go, a server with Allow0RTT keeps
// them for a short while under the connection ID they were sent to and
// hands them to the connection that Initial creates.
const (
	earlyQueueConns   = 32                     // connection IDs queued at a time
	earlyQueuePackets = 16                     // datagrams per connection ID
	earlyQueueTTL     = 100 * time.Millisecond // how long they wait for their Initial
)

// earlyQueue holds those datagrams: at most earlyQueueConns times
// earlyQueuePackets receive buffers (1 MiB), whatever an attacker sends,
// and each for earlyQueueTTL at most (expired entries are freed when the
// queue is next used or the listener closes).
type earlyQueue struct {
	mu sync.Mutex
	m  map[string]*earlyEntry
}

type earlyEntry struct {
	pkts    []receivedPacket
	expires time.Time
}

// add keeps p for the connection ID dcid; it reports false (p stays the
// caller's) when the queue has no room.
func (q *earlyQueue) add(dcid []byte, p receivedPacket, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expireLocked(now, false)
	e := q.m[string(dcid)]
	if e == nil {
		if len(q.m) >= earlyQueueConns {
			return false
		}
		if q.m == nil {
			q.m = make(map[string]*earlyEntry)
		}
		e = &earlyEntry{expires: now.Add(earlyQueueTTL)}
		q.m[string(dcid)] = e
	}
	if len(e.pkts) >= earlyQueuePackets {
		return false
	}
	e.pkts = append(e.pkts, p)
	return true
}

// take returns, and forgets, what waits for dcid.
func (q *earlyQueue) take(dcid []byte, now time.Time) []receivedPacket {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expireLocked(now, false)
	e := q.m[string(dcid)]
	if e == nil {
		return nil
	}
	delete(q.m, string(dcid))
	return e.pkts
}

// expireLocked frees the entries whose time is up, or all.
func (q *earlyQueue) expireLocked(now time.Time, all bool) {
	for k, e := range q.m {
		if all || !now.Before(e.expires) {
			for _, p := range e.pkts {
				putBuffer(p.buf)
			}
			delete(q.m, k)
		}
	}
}

// clear frees everything (the listener closed).
func (q *earlyQueue) clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expireLocked(time.Time{}, true)
}

// rcvTimeOf is when p arrived, or now if the socket did not say.
func rcvTimeOf(p receivedPacket) time.Time {
	if p.rcvTime.IsZero() {
		return time.Now()
	}
	return p.rcvTime
}
