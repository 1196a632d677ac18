//go:build !race

package tlskdf

// raceEnabled: see race_test.go.
const raceEnabled = false
