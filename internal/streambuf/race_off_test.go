//go:build !race

package streambuf

const raceEnabled = false
