package mw

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// Defaults of [Retry].
const (
	// DefaultRetryAttempts is the total number of attempts per message.
	DefaultRetryAttempts = 3
	// DefaultMaxRetryAfter is the longest Retry-After that is waited out.
	DefaultMaxRetryAfter = 60 * time.Second
	// retryWait is the min and max handed to the Backoff: with
	// RateLimitLinearJitterBackoff it makes the wait exactly 1s × attempt.
	retryWait = time.Second
)

// RetryOptions configures [Retry].
type RetryOptions struct {
	// Attempts is the total number of attempts per message, the first
	// included; 0 means [DefaultRetryAttempts].
	Attempts int
	// Backoff computes the wait before the next attempt. It is called with
	// min = max = 1s, the 0-based number of the attempt that failed, and, for
	// an HTTP status, a synthesised *http.Response carrying the status and
	// the response headers (no body). nil means
	// retryablehttp.RateLimitLinearJitterBackoff: 1s × attempt (1s, 2s, …),
	// or what Retry-After says (seconds or an HTTP-date) on a 429 or 503.
	Backoff retryablehttp.Backoff
	// MaxRetryAfter is the longest wait a 429 or 503 may ask for; a server
	// asking for more gets its error surfaced at once, with no sleep. A wait
	// of exactly MaxRetryAfter is honoured. 0 means [DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then. nil
	// means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// ReplaySafe reports whether a request with this method may be sent
	// again after it may have reached the server. nil means
	// [ReplaySafeMethod].
	ReplaySafe func(method string) bool
	// Reissue sends every attempt of a request after the first under a
	// fresh minted id, as MCP 2026-07-28 asks (it has no resumption: a
	// request whose stream broke is lost, and sent again with a new id).
	// The answer reaches the client under the client's own id. The
	// relay's chain for a 2026-07-28 server sets it.
	Reissue bool
	// Reached, when set, tells whether the server has ever been reached,
	// and is told so by every attempt that reaches it; the stages that
	// reach one server share it (the relay's two chains do). Until then a
	// message that could not be sent at all (a [frame.SendError] with Sent
	// false: the connection refused, the host name not resolved) is not
	// sent again: nothing says the server is coming, and the client hears
	// at once that it is not there. Once the server has answered anything
	// (any HTTP status) or taken a connection, such failures are retried
	// as below: the server was there and went away. nil retries them
	// always.
	Reached *Reached
	// Logger receives a line per retry and per give-up; nil discards.
	Logger *slog.Logger
}

// Reached records whether a server has ever been reached (see
// RetryOptions.Reached). The zero value is a server not reached yet; it
// is safe for concurrent use.
type Reached struct{ yes atomic.Bool }

// Reached reports whether the server has been reached.
func (r *Reached) Reached() bool { return r.yes.Load() }

// Set records that the server has been reached.
func (r *Reached) Set() { r.yes.Store(true) }

// note records what an attempt that ended with err says about reaching
// the server: anything but a message that could not be sent at all, or a
// cancellation before an answer, shows that the server was there.
func (r *Reached) note(err error) {
	if r == nil || r.yes.Load() {
		return
	}
	var se *frame.SendError
	var st *frame.StatusError
	switch {
	case err == nil, errors.As(err, &st):
	case errors.As(err, &se) && se.Sent:
	default:
		return
	}
	r.yes.Store(true)
}

// Retry returns the stage that sends a server-bound message again when
// delivering it failed in a way that another attempt can fix. It sits near
// the transport in the relay's chain (see the package documentation), so
// every message that leaves, including the page requests and the replayed
// initialize of the outer stages, gets the same policy. Client-bound
// traffic passes untouched.
//
// Each failed attempt is judged on its own:
//
//   - ctx done: return at once.
//   - [frame.SendError] with Sent false (the server never saw the message):
//     retry, whatever the message — unless it matches
//     [frame.ErrUnavailable]: the transport has already waited for the
//     server as long as it may; or the server has never been reached
//     (RetryOptions.Reached).
//   - [frame.SendError] matching [frame.ErrTooLarge] or
//     [frame.ErrOverBudget] (an answer over the size cap or the memory
//     budget): return at once; asking again would fetch it again.
//   - [frame.SendError] with Sent true (the connection broke after the
//     request went out): retry only a request whose method is replay-safe
//     (see [ReplaySafeMethod]); never tools/call, never a notification or a
//     response, which could take effect twice.
//   - [frame.StatusError] 429, or 503 with Retry-After (the server's own
//     "not processed, come back later"): wait per Backoff, which honours
//     Retry-After, then retry. A wait longer than MaxRetryAfter is not
//     waited out: the error is returned at once.
//   - [frame.StatusError] 503 without Retry-After: retry a replay-safe
//     request only. A bare 503 may come from a proxy whose upstream reset
//     after the request ran ("upstream reset before headers"), so a
//     tools/call (or a notification, or a response) is never sent again on
//     it; nor on a 502 or 504, which are never retried.
//   - anything else (other 4xx and 5xx, 401, 404, a JSON-RPC-level
//     failure): return at once, for the outer stages to decide.
//
// After the last attempt the last error is returned. Go errors only ever
// come from the inner chain; Retry adds none of its own.
func Retry(o RetryOptions) Middleware {
	if o.Attempts <= 0 {
		o.Attempts = DefaultRetryAttempts
	}
	if o.Backoff == nil {
		o.Backoff = retryablehttp.RateLimitLinearJitterBackoff
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.Sleep == nil {
		o.Sleep = frame.Sleep
	}
	if o.ReplaySafe == nil {
		o.ReplaySafe = ReplaySafeMethod
	}
	o.Logger = loggerOrDiscard(o.Logger)
	if !o.Reissue {
		return ServerBound(func(next Handler) Handler {
			return &retrier{o: o, next: next}
		})
	}
	return func(next Duplex) Duplex {
		r := &retrier{o: o, next: next.ToServer, toClient: next.ToClient, reissued: NewRemap("retry")}
		return Duplex{ToServer: r, ToClient: HandlerFunc(r.fromServer)}
	}
}

// ReplaySafeMethod reports whether a request with this method may be sent a
// second time after the first may have reached the server: running it twice
// has no effect beyond running it once. These are the read-only requests and
// those whose repetition is harmless (setting the same log level,
// subscribing twice). tools/call is never replay-safe: a tool may act on the
// world.
//
// The class is frame/mcp's ([mcp.ReplaySafe]).
func ReplaySafeMethod(method string) bool { return mcp.IsReplaySafe(method) }

type retrier struct {
	o    RetryOptions
	next Handler
	// With Reissue: the client-bound exit, and the attempts under minted
	// ids.
	toClient Handler
	reissued *Remap
}

// fromServer takes the answers to reissued attempts and gives them back
// under the client's id.
func (r *retrier) fromServer(ctx context.Context, m frame.Message) error {
	if r.reissued.Capture(m) {
		return nil
	}
	return r.toClient.Handle(ctx, m)
}

// send makes one attempt: the first as m is, later ones of a request under
// a minted id when reissuing.
func (r *retrier) send(ctx context.Context, m frame.Message, attempt int) error {
	if attempt == 0 || r.reissued == nil || m.Kind() != frame.Request {
		return r.next.Handle(ctx, m)
	}
	answer, err := r.reissued.Call(ctx, r.next, m, m.ID())
	if err != nil {
		return err
	}
	answer, err = answer.WithID(m.ID())
	if err != nil {
		return err
	}
	return r.toClient.Handle(ctx, answer)
}

func (r *retrier) Handle(ctx context.Context, m frame.Message) error {
	for attempt := 0; ; attempt++ {
		err := r.send(ctx, m, attempt)
		r.o.Reached.note(err)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		wait, retry := r.decide(m, err, attempt)
		if !retry {
			return err
		}
		if attempt+1 >= r.o.Attempts {
			// Debug: the edge that answers the client logs the failure
			// (one warning per failed request).
			r.o.Logger.Debug("request failed after retries", "method", m.Method(), "id", m.ID().String(), "attempts", attempt+1, "err", err)
			return err
		}
		r.o.Logger.Debug("retrying", "method", m.Method(), "id", m.ID().String(), "attempt", attempt+1, "wait", wait, "err", err)
		if r.o.Sleep(ctx, wait) != nil {
			return err
		}
	}
}

// decide reports whether a message whose 0-based attempt failed with err is
// sent again, and after how long.
func (r *retrier) decide(m frame.Message, err error, attempt int) (time.Duration, bool) {
	var se *frame.SendError
	if errors.As(err, &se) {
		if errors.Is(se, frame.ErrUnavailable) || errors.Is(se, frame.ErrTooLarge) || errors.Is(se, frame.ErrOverBudget) {
			return 0, false
		}
		if se.Sent && (m.Kind() != frame.Request || !r.o.ReplaySafe(m.Method())) {
			return 0, false
		}
		if !se.Sent && r.o.Reached != nil && !r.o.Reached.Reached() {
			r.o.Logger.Debug("the server has never been reached: not sending again", "method", m.Method(), "id", m.ID().String())
			return 0, false
		}
		return r.o.Backoff(retryWait, retryWait, attempt, nil), true
	}
	var st *frame.StatusError
	if errors.As(err, &st) && (st.Code == http.StatusTooManyRequests || st.Code == http.StatusServiceUnavailable) {
		retryAfter := st.Header.Values("Retry-After")
		replaySafe := m.Kind() == frame.Request && r.o.ReplaySafe(m.Method())
		if st.Code == http.StatusServiceUnavailable && len(retryAfter) == 0 && !replaySafe {
			r.o.Logger.Debug("503 without Retry-After: the request may have run; not sending it again", "method", m.Method(), "id", m.ID().String())
			return 0, false
		}
		resp := &http.Response{StatusCode: st.Code, Header: make(http.Header, 1)}
		if len(retryAfter) > 0 {
			resp.Header["Retry-After"] = retryAfter
		}
		wait := r.o.Backoff(retryWait, retryWait, attempt, resp)
		if wait > r.o.MaxRetryAfter {
			r.o.Logger.Warn("server asks to wait too long; not retrying", "method", m.Method(), "id", m.ID().String(), "status", st.Code, "wait", wait, "max", r.o.MaxRetryAfter)
			return 0, false
		}
		return wait, true
	}
	return 0, false
}
