//go:build race

package stateless

// raceEnabled skips allocation counts that the race detector inflates
// (its instrumentation keeps crypto/sha256's state marshaling from
// being optimized).
const raceEnabled = true
