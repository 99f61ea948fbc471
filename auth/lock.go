package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
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
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, wait, errLockTimeout)
		defer cancel()
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
		if frame.Sleep(ctx, poll) != nil {
			f.Close()
			return nil, context.Cause(ctx)
		}
		poll = min(2*poll, lockPollMax)
	}
}
