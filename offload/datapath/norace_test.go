//go:build !race

package datapath

// raceEnabled: see race_test.go.
const raceEnabled = false
