//go:build !race

package handshake

// raceEnabled: see race_test.go.
const raceEnabled = false
