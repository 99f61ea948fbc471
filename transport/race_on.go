//go:build race

package transport

// raceEnabled is true in a build with the race detector.
const raceEnabled = true
