package fileserver

import (
	"crypto/rand"
	"crypto/tls"
	"sync"
	"time"
)

// Session ticket keys as crypto/tls manages its automatic ones: a fresh
// key every ticketKeyRotation encrypts new tickets, and a ticket stays
// valid while its key is among the last ticketKeysKept.
const (
	ticketKeyRotation = 24 * time.Hour
	ticketKeysKept    = 7
)

// ticketKeys are the explicit session ticket keys of one tls.Config.
// Explicit keys on the configuration that every worker's handshake uses
// are what let workers resume each other's sessions: crypto/tls's
// automatic keys belong to each clone of a configuration.
type ticketKeys struct {
	c    *tls.Config
	mu   sync.Mutex
	keys [][32]byte
}

// rotate puts a fresh key in front and drops the oldest beyond
// ticketKeysKept (tls.Config.SetSessionTicketKeys is safe while c serves).
func (t *ticketKeys) rotate() {
	var k [32]byte
	_, _ = rand.Read(k[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keys = append([][32]byte{k}, t.keys[:min(len(t.keys), ticketKeysKept-1)]...)
	t.c.SetSessionTicketKeys(t.keys)
}

// rotateTicketKeys gives c a random session ticket key now and a new one
// every period. The returned function stops the rotation.
func rotateTicketKeys(c *tls.Config, period time.Duration) (stop func()) {
	t := &ticketKeys{c: c}
	t.rotate()
	done := make(chan struct{})
	tick := time.NewTicker(period)
	go func() {
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				t.rotate()
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}
