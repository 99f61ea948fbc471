package cli

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// watchParent has the kernel send this process SIGTERM when its parent,
// pid, dies (PR_SET_PDEATHSIG), which ends serve as any SIGTERM does; it
// calls gone at once when pid is no longer the parent (it died before the
// signal was asked for). The signal is tied to the thread that asked for
// it, which lives as long as the process: Go's threads do not exit
// (none of serve's goroutines locks one and ends).
func watchParent(pid int, gone func()) (stop func(), err error) {
	stop = func() {}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return stop, fmt.Errorf("PR_SET_PDEATHSIG: %w", err)
	}
	if os.Getppid() == pid {
		return stop, nil
	}
	err = parentMismatch(pid, gone)
	if err != nil { // not the parent: its death means nothing here
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0)
	}
	return stop, err
}
