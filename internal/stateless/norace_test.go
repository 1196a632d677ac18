//go:build !race

package stateless

// raceEnabled: see race_test.go.
const raceEnabled = false
