//go:build !race

package pipeline

// largePayload is the size of the large round trip in the serve tests.
const largePayload = 16 << 20
