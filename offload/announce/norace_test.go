//go:build !race

package announce

const raceEnabled = false
