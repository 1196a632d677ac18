//go:build race

package abuse

// raceEnabled: this test binary has the race detector.
const raceEnabled = true
