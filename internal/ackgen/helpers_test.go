package ackgen

// Helpers that only this package's tests use: a connection embeds its
// Trackers by value and calls Init.

import "github.com/turboretry/turboretry/internal/protocol"

// NewTracker returns a Tracker for the given space.
func NewTracker(space protocol.PacketNumberSpace, cfg Config) *Tracker {
	t := new(Tracker)
	t.Init(space, cfg)
	return t
}
