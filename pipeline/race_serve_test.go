//go:build race

package pipeline

// largePayload is the size of the large round trip in the serve tests,
// smaller under the race detector, which slows byte loops some tenfold in
// every process involved.
const largePayload = 2 << 20
