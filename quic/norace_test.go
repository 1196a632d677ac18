//go:build !race

package quic

// raceEnabled: see race_test.go.
const raceEnabled = false
