package mw

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// DefaultDrainRetryAfter is the Retry-After of [RefuseNewSessions]'s
// refusals: one second. Behind a load balancer the gateway's readiness
// fails as its drain starts, so a client that tries again a second later
// reaches another replica; a client of a lone gateway that comes back
// here meanwhile is refused again until the drain ends and the listener
// closes, and then finds the gateway that replaces it (or its own
// backoff's next turn). A longer wait would only delay the clients that
// have somewhere else to go.
const DefaultDrainRetryAfter = time.Second

// DrainOptions configures [RefuseNewSessions].
type DrainOptions struct {
	// Draining reports whether the gateway is draining; required. It is
	// asked for each message that would open a session.
	Draining func() bool
	// RetryAfter is the Retry-After of a refusal, in whole seconds
	// (rounded up, at least 1); 0 means DefaultDrainRetryAfter.
	RetryAfter time.Duration
	// SSE puts the stage in front of [Sessions.SSE], where a GET (a new
	// HTTP+SSE stream) opens a session, instead of [Sessions.Handle],
	// where an initialize request without Mcp-Session-Id does.
	SSE bool
}

// RefuseNewSessions is the stage in front of serve's session stage that
// refuses new sessions while the gateway drains (see the package
// documentation): while o.Draining reports true, a message that would open
// a session is refused with 503, a Retry-After header and a JSON-RPC error
// (-32000) that names the drain, under the initialize's id (null for a
// stream). That is a session-era initialize request without
// Mcp-Session-Id on Streamable HTTP, and a GET on HTTP+SSE (o.SSE).
// Everything else passes, while draining too: the requests, notifications
// and responses of the sessions already open, so that what is in flight
// finishes and a request waiting for its client gets its answer. Nothing
// passes to the client side but what passes through.
func RefuseNewSessions(o DrainOptions) Middleware {
	retryAfter := drainRetryAfter(o.RetryAfter)
	msg := "the gateway is draining before it shuts down and opens no new session: retry after " + retryAfter + "s (behind a load balancer, the retry reaches another replica)"
	return func(next Duplex) Duplex {
		return Duplex{
			ToServer: HandlerFunc(func(ctx context.Context, m frame.Message) error {
				opens, id := opensSession(ctx, m, o.SSE)
				if !opens || !o.Draining() {
					return next.ToServer.Handle(ctx, m)
				}
				err := Refuse(http.StatusServiceUnavailable, id, frame.CodeGateway, msg)
				err.(*frame.StatusError).Header.Set("Retry-After", retryAfter)
				return err
			}),
			ToClient: next.ToClient,
		}
	}
}

// drainRetryAfter returns the Retry-After of a drain's refusals for d:
// whole seconds, rounded up; DefaultDrainRetryAfter when d is not
// positive.
func drainRetryAfter(d time.Duration) string {
	if d <= 0 {
		d = DefaultDrainRetryAfter
	}
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// opensSession reports whether m would open a session at the session stage
// (of HTTP+SSE when sse), and the id to refuse it under.
func opensSession(ctx context.Context, m frame.Message, sse bool) (bool, frame.ID) {
	x := ExchangeOf(ctx)
	if x == nil {
		return false, ""
	}
	if sse {
		return x.Method() == http.MethodGet, ""
	}
	return x.Method() == http.MethodPost && m.Kind() == frame.Request && m.Method() == "initialize" &&
		m.Header().Get(frame.HeaderSessionID) == "", m.ID()
}
