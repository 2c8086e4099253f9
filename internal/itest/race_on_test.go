//go:build race

package itest

// raceDetector: the race detector multiplies the load tests' cost, which
// then run a smaller share of their seeds.
const raceDetector = true
