//go:build race

package announce

// raceEnabled skips allocation counts, which the race detector inflates.
const raceEnabled = true
