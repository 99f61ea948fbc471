//go:build race

package main_test

// raceDetector reports whether the tests run under -race; the relay binary
// is then built with -race too, so its data races fail the tests (a relay
// that reports one exits 66).
const raceDetector = true
