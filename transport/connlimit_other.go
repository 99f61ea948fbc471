//go:build !linux

package transport

import "net"

// unreadBytes returns 0: this system's count of a socket's unread bytes
// is not asked for (see the Linux version).
func unreadBytes(net.Conn) int { return 0 }
