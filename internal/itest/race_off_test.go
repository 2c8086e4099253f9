//go:build !race

package itest

const raceDetector = false
