//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package auth

import (
	"errors"
	"os"
	"syscall"
)

// fileLocking reports whether lock files really lock on this platform.
const fileLocking = true

// tryLock takes a non-blocking exclusive flock on f and reports whether it
// got it. flock locks belong to the open file description, so two opens in
// one process exclude each other just as two processes do.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EAGAIN):
			return false, nil
		}
		return false, err
	}
}

// unlockFile releases the lock tryLock took.
func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
