//go:build !linux

package transport

import "net"

// lazyListener returns nil: connections read lazily on Linux only (see
// rawio_linux.go).
func lazyListener(net.Listener) net.Listener { return nil }

// lazyReadsHere: connections can be read lazily on this platform.
const lazyReadsHere = false
