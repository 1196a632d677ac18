//go:build race

package agent

// raceEnabled skips allocation counts, which the race detector inflates.
const raceEnabled = true
