package auth

import (
	"context"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Clock is the time source of a [Client]: token expiry, the background
// refresh schedule, the sign-in cooldown, device-grant polling and the
// --oauth-timeout bound all read it, so tests drive time by hand.
//
// Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed. A
	// d <= 0 fires at once.
	After(d time.Duration) <-chan time.Time
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// withClockTimeout returns a context that is cancelled with cause when d has
// passed on clock, or when parent is done. The goroutine that watches the
// clock ends with the returned context, which the caller must cancel.
func withClockTimeout(parent context.Context, clock Clock, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if _, ok := clock.(realClock); ok {
		return context.WithTimeoutCause(parent, d, cause)
	}
	ctx, cancel := context.WithCancelCause(parent)
	fire := clock.After(d)
	go func() {
		select {
		case <-fire:
			cancel(cause)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// sleep waits d on clock, or until ctx is done and returns its cause.
func sleep(ctx context.Context, clock Clock, d time.Duration) error {
	if frame.SleepUntil(ctx, clock.After(d)) != nil {
		return context.Cause(ctx)
	}
	return nil
}
