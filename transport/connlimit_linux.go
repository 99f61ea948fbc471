package transport

import (
	"net"
	"syscall"
	"unsafe"
)

// unreadBytes returns how many bytes the kernel holds for c that no one
// has read yet (0 when it cannot tell): a request arriving on a
// connection its server still thinks idle. It does not wait for, nor
// disturb, a read under way on c.
func unreadBytes(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	_ = rc.Control(func(fd uintptr) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
			n = 0
		}
	})
	return int(n)
}
