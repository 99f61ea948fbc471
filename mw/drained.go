package mw

import (
	"context"
	"net/http"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// AfterDrainOptions configures [RefuseAfterDrain].
type AfterDrainOptions struct {
	// Drained reports whether the gateway's drain is over; required. It is
	// asked for each message, and must be cheap: an atomic load.
	Drained func() bool
	// RetryAfter is the Retry-After of a 503 refusal, in whole seconds
	// (rounded up, at least 1); 0 means DefaultDrainRetryAfter.
	RetryAfter time.Duration
}

// RefuseAfterDrain is the stage in front of serve's sessions, and in
// front of its pool of 2026-07-28 children, that refuses the work a
// gateway whose drain is over could only cut. Once o.Drained reports
// true the sessions are about to end and the children to stop, so a
// message carrying a request (or a batch with one) and a GET (a new
// stream) are not taken but refused:
//
//   - under an Mcp-Session-Id (a session-era session, or an HTTP+SSE one,
//     whose transport sets the header): 404 with a JSON-RPC error
//     (-32000) saying that the session ended. A 404 is what the spec has a
//     server answer for a session it ended, and a client starts a new
//     session on it: elsewhere, since a draining gateway opens none.
//   - without one (a 2026-07-28 request): 503 with Retry-After and a
//     JSON-RPC error (-32000), which a load balancer or the client sends
//     again, to another replica.
//
// Either way the request was never taken, so sending it again is safe.
// The error is under the first request's id (null for a GET).
// Notifications, responses and DELETEs pass: they start no work, and an
// answer a request in flight waits for lets it finish. Until the drain is
// over every message passes, at the cost of one call to o.Drained.
// Nothing passes to the client side but what passes through.
//
// The stage closes a race that a drain alone leaves open: a drain ends
// when nothing is in flight, and a request of an open session that
// arrives between that moment and the sessions' end would be taken and
// then cut. The gateway sets Drained once nothing is in flight and then
// waits for the requests that passed the stage just before (see
// pipeline.Server.Drain).
func RefuseAfterDrain(o AfterDrainOptions) Middleware {
	retryAfter := drainRetryAfter(o.RetryAfter)
	const ended = "session ended: the gateway has drained and is shutting down; start a new session"
	unavailable := "the gateway has drained and is shutting down: retry after " + retryAfter + "s (behind a load balancer, the retry reaches another replica)"
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				if !o.Drained() {
					return next.ToServer.Handle(ctx, m)
				}
				id, startsWork := m.FirstRequestID()
				if x := ExchangeOf(ctx); x != nil && x.Method() == http.MethodGet {
					startsWork = true
				}
				if !startsWork {
					return next.ToServer.Handle(ctx, m)
				}
				if m.Header().Get(frame.HeaderSessionID) != "" {
					return Refuse(http.StatusNotFound, id, frame.CodeGateway, ended)
				}
				err := Refuse(http.StatusServiceUnavailable, id, frame.CodeGateway, unavailable)
				err.(*frame.StatusError).Header.Set("Retry-After", retryAfter)
				return err
			}),
			ToClient: next.ToClient,
		}
	}
}
