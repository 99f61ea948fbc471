package mw

import (
	"context"
	"errors"
	"log/slog"
)

// StartedChild is a started child process as [StartChild] needs it
// (serve's children: a transport.Child and what serve counts of it).
type StartedChild interface {
	// Handle writes a message to the child's stdin.
	Handler
	// Done is closed when the child has ended.
	Done() <-chan struct{}
	// Close ends the child.
	Close(ctx context.Context) error
	// EndedOnItsOwn reports whether the child has ended, and not because
	// it was closed.
	EndedOnItsOwn() bool
	// Err says how the child ended: nil for exit status 0.
	Err() error
	// StderrExcerpt returns the lines of its stderr that explain its end.
	StderrExcerpt() string
}

// StartChildOptions configures [StartChild].
type StartChildOptions struct {
	// Conn is the child's connection state, where the handshake's outcome
	// goes ([ChildHandshake]).
	Conn *Conn
	// Own answers the child's requests during the handshake
	// ([ChildAnswers.Handshake]); [ChildAnswers.Started] is called when
	// it succeeded.
	Own *ChildAnswers
	// ClientVersion is the version in the gateway's clientInfo.
	ClientVersion string
	// Outcome, when not nil, is told the outcome of the handshake of a
	// child that started: nil, or the error it failed with on one line
	// ([ChildErrorLine]). It is not told a failure of start itself.
	Outcome func(err error)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// StartChild is serve's policy for starting a child that serves
// 2026-07-28 clients: it starts one with start, whose messages go to
// fromChild, and performs the gateway's own handshake with it
// ([ChildHandshake]). A child that ends during that handshake (on its
// server/discover, [ErrChildDied], or after it) is started again, once,
// and taken for a child of the session era (SkipDiscover): some
// session-era servers exit on a method they do not know. When the one
// started again ends during its handshake too, StartChild fails with a
// [*ChildExitError] ("during its handshake": its exit status, its
// stderr, the advice for it). Any other failed handshake is returned as
// it is, at once. A child whose handshake failed is closed.
//
// It returns the child and the [Late] its messages go to: bound to the
// handshake (with o.Own answering the child's requests) until the caller
// binds it anew to the stages in front of the child. A failure of start
// is returned as it is.
func StartChild[C StartedChild](ctx context.Context, start func(fromChild Handler) (C, error), o StartChildOptions) (C, *Late, error) {
	var none C
	log := loggerOrDiscard(o.Logger)
	fromChild := &Late{}
	skipDiscover := false
	for {
		c, err := start(fromChild)
		if err != nil {
			return none, nil, err
		}
		hs := NewChildHandshake(o.Conn, c)
		fromChild.Bind(o.Own.Handshake(hs.FromChild(), c))
		err = runUntilDone(ctx, c.Done(), func(ctx context.Context) error {
			return hs.Run(ctx, ChildHandshakeOptions{SkipDiscover: skipDiscover, ClientVersion: o.ClientVersion, Logger: o.Logger})
		})
		if err == nil {
			o.Own.Started()
			o.outcome(nil)
			return c, fromChild, nil
		}
		_ = c.Close(ctx)
		if errors.Is(err, errChildDone) || c.EndedOnItsOwn() {
			if skipDiscover {
				err = NewChildExitError("during its handshake", c.Err(), c.StderrExcerpt())
			} else {
				err = ErrChildDied
			}
		}
		if !errors.Is(err, ErrChildDied) || skipDiscover {
			o.outcome(ChildErrorLine(err))
			return none, nil, err
		}
		log.Info("the server process exited on server/discover; starting it again as a server of the session era")
		skipDiscover = true
	}
}

func (o StartChildOptions) outcome(err error) {
	if o.Outcome != nil {
		o.Outcome(err)
	}
}

// errChildDone is the cause runUntilDone gives f's context when the child
// ends.
var errChildDone = errors.New("the server process ended")

// runUntilDone runs f in a context that also ends when done is closed
// (a child ended); it returns errChildDone when f failed after that.
func runUntilDone(ctx context.Context, done <-chan struct{}, f func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-done:
			cancel(errChildDone)
		case <-ctx.Done():
		}
	}()
	err := f(ctx)
	if err != nil && context.Cause(ctx) == errChildDone {
		return errChildDone
	}
	return err
}
