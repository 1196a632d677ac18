//go:build race

package quic

// raceEnabled skips allocation counts, which the race detector inflates.
const raceEnabled = true
