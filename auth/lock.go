package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// errLockTimeout means a lock file stayed locked for the whole wait.
var errLockTimeout = errors.New("lock wait timed out")

// Lock polling intervals. Polling uses real time, not the injected [Clock]:
// it only paces retries against another process and decides nothing.
const (
	lockPollMin = 5 * time.Millisecond
	lockPollMax = 100 * time.Millisecond
)

// lockFile takes an exclusive lock on the file at path (created 0600),
// waiting up to wait (0 = as long as ctx allows). It returns the function
// that releases the lock. Where the platform has no file locks
// ([fileLocking] is false) it succeeds at once and locks nothing.
func lockFile(ctx context.Context, path string, wait time.Duration) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	poll := lockPollMin
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return func() {
				_ = unlockFile(f)
				f.Close()
			}, nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, context.Cause(ctx)
		case <-deadline:
			t.Stop()
			f.Close()
			return nil, errLockTimeout
		case <-t.C:
		}
		poll = min(2*poll, lockPollMax)
	}
}
