//go:build linux

package transporttest

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessGone waits up to d for the process pid to have exited and reports
// whether it did; with d <= 0 it checks once without waiting. A zombie (a
// child that has exited but not been waited for) counts as exited. It
// fails t if the process cannot be watched.
//
// It polls a pidfd, which becomes readable when the process ends, so it
// needs no sleeping. Linux only (pidfd_open, Linux 5.3).
func ProcessGone(t testing.TB, pid int, d time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		ms := max(int(time.Until(deadline).Milliseconds()), 0)
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd %d: %v", pid, err)
		}
		return n > 0
	}
}
