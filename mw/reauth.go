package mw

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Authorizer is what [Reauth] needs from an OAuth client. auth.Client
// implements it; mw knows it only through this interface.
//
// Both handlers receive the generation of the token the failed request
// carried (from Generation, taken before the request was sent) and the
// response header of the 401 or 403, whose WWW-Authenticate challenge they
// read (an implementation may find a more exact generation there). They
// must be safe for concurrent use and may block (a refresh, a foreground
// sign-in) until ctx is done.
type Authorizer interface {
	// Generation returns the generation of the current token; it changes
	// whenever the token does.
	Generation() uint64
	// Unauthorized handles a 401. It returns true when the request should
	// be sent again with the now current token; false with an error that
	// has a Reauthorizing() bool method returning true (see [Reauthorizing])
	// when a sign-in was started in the background; false with any other
	// error when nothing helps.
	Unauthorized(ctx context.Context, gen uint64, h http.Header) (retry bool, err error)
	// Forbidden handles a 403. It returns true when the request should be
	// sent again (after a step-up); false and nil when the 403 is not an
	// authorization matter (no insufficient_scope) and stands; otherwise as
	// Unauthorized.
	Forbidden(ctx context.Context, gen uint64, h http.Header) (retry bool, err error)
}

// Reauthorizing is implemented by an Authorizer's errors that mean a fresh
// sign-in is under way: the request is answered with
// [frame.CodeReauthorizing] (-32002) and the error's text, and the client
// may retry once the user has signed in.
type Reauthorizing interface {
	error
	Reauthorizing() bool
}

// DefaultMaxStepUps is how many step-up retries one request gets.
const DefaultMaxStepUps = 1

// ReauthOptions configures [Reauth].
type ReauthOptions struct {
	// Authorizer handles 401 and 403; nil makes Reauth a pass-through.
	Authorizer Authorizer
	// MaxStepUps bounds the retries after a 403 step-up for one request;
	// 0 means [DefaultMaxStepUps].
	MaxStepUps int
	// Logger receives a line per decision; nil discards.
	Logger *slog.Logger
}

// AuthError is the error [Reauth] returns when a request stays
// unauthorized. Its text is what the relay's edge sends the client as
// -32000: "authentication failed" for a 401, "authorization failed" for a
// 403, followed by the Authorizer's reason.
//
// It unwraps to the reason, not to the *frame.StatusError it keeps in
// Status: [ErrorFor] would answer a status error with "HTTP 401".
type AuthError struct {
	// Status is the 401 or 403 the server answered.
	Status *frame.StatusError
	// Err is why the Authorizer could not help; may be nil.
	Err error
}

// Error returns "authentication failed" or "authorization failed" and the
// reason.
func (e *AuthError) Error() string {
	msg := "authentication failed"
	if e.Status != nil && e.Status.Code == http.StatusForbidden {
		msg = "authorization failed"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the reason.
func (e *AuthError) Unwrap() error { return e.Err }

// Reauth returns the stage that recovers server-bound messages from 401 and
// 403, sitting just outside the transport in the relay's chain (see the
// package documentation). For every message —
// any request, not only initialize, and notifications alike — whose
// delivery failed with a *frame.StatusError:
//
//   - 401: asks Authorizer.Unauthorized. On retry it sends the message again,
//     once per message: a second 401 is reported to the Authorizer (which
//     may then start a background sign-in) but not retried again.
//   - 403: asks Authorizer.Forbidden. On retry (a step-up happened) it sends
//     the message again, at most MaxStepUps times. A 403 the Authorizer
//     does not claim is returned as it came, for the edge to answer as
//     "HTTP 403".
//   - A background sign-in started ([Reauthorizing] error): a request is
//     answered toward the client with -32002 and the error's text, and
//     Handle returns nil; for a notification or a response there is no one
//     to answer and the error is returned.
//   - Otherwise an [*AuthError] is returned.
//
// A message whose ctx is done is not sent again. Client-bound traffic
// passes untouched.
func Reauth(o ReauthOptions) Middleware {
	if o.Authorizer == nil {
		return Passthrough
	}
	if o.MaxStepUps <= 0 {
		o.MaxStepUps = DefaultMaxStepUps
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: &reauther{o: o, next: next.ToServer, toClient: next.ToClient},
			ToClient: next.ToClient,
		}
	}
}

type reauther struct {
	o        ReauthOptions
	next     Handler
	toClient Handler
}

func (r *reauther) Handle(ctx context.Context, m frame.Message) error {
	a := r.o.Authorizer
	gen := a.Generation()
	err := r.next.Handle(ctx, m)
	retried401, stepUps := false, 0
	for {
		var st *frame.StatusError
		if err == nil || !errors.As(err, &st) {
			return err
		}
		var retry bool
		var aerr error
		switch st.Code {
		case http.StatusUnauthorized:
			retry, aerr = a.Unauthorized(ctx, gen, st.Header)
			if retry && retried401 {
				retry, aerr = false, errors.New("the server rejected the new token too")
			}
			retried401 = true
		case http.StatusForbidden:
			if stepUps >= r.o.MaxStepUps {
				return &AuthError{Status: st, Err: errors.New("the server still refuses after a step-up")}
			}
			retry, aerr = a.Forbidden(ctx, gen, st.Header)
			if !retry && aerr == nil {
				return err // not an authorization matter: the 403 stands
			}
			stepUps++
		default:
			return err
		}
		var ra Reauthorizing
		switch {
		case aerr != nil && errors.As(aerr, &ra) && ra.Reauthorizing():
			r.o.Logger.Info("sign-in started; asking the client to retry", "method", m.Method(), "id", m.ID().String())
			if m.Kind() != frame.Request {
				return aerr
			}
			return r.toClient.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeReauthorizing, ra.Error()))
		case aerr != nil || !retry:
			ae := &AuthError{Status: st, Err: aerr}
			r.o.Logger.Warn(ae.Error(), "method", m.Method(), "id", m.ID().String())
			return ae
		}
		if ctx.Err() != nil {
			return err
		}
		r.o.Logger.Debug("retrying with a new token", "method", m.Method(), "id", m.ID().String(), "status", st.Code)
		gen = a.Generation()
		err = r.next.Handle(ctx, m)
	}
}
