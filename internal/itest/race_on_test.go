//go:build race

package itest

// raceEnabled: the race detector slows JavaScript several times over.
const raceEnabled = true
