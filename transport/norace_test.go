//go:build !race

package transport

// largeMessageSize is the size of the large-message tests' payload.
const largeMessageSize = 16 << 20
