//go:build race

package policies

// raceEnabled: the race detector slows the timing tests down.
const raceEnabled = true
