//go:build !race

package main_test

// raceDetector reports whether the tests run under -race.
const raceDetector = false
