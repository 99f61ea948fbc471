package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// SSEClient is the client side of MCP's HTTP+SSE transport (revision
// 2024-11-05): a long-lived GET stream whose first event names the endpoint
// to POST messages to, and which then carries every message from the server,
// responses included.
//
// [SSEClient.Run] owns the stream and reconnects it when it drops; a fresh
// endpoint event is needed after each reconnect. [SSEClient.Handle] POSTs a
// message to the current endpoint and, for a request, waits until the
// response has come down the stream and been delivered.
//
// An HTTP+SSE session lives in the endpoint URL; when the stream drops, the
// server forgets it, and the next stream brings a new endpoint that knows
// nothing of the old session's initialize. So that session recovery (mw)
// works as it does on Streamable HTTP, the endpoint stands in for a session
// id: every message read from a stream carries its endpoint as
// Mcp-Session-Id in its side channel, and a message whose side channel
// names an endpoint that is no longer current is refused with a
// *frame.StatusError 404 — what a Streamable server answers for a session it
// forgot — without being posted.
//
// Set the fields before first use and do not change them afterwards. Handle
// is safe for concurrent use; Run is called once.
type SSEClient struct {
	// URL is the SSE stream's URL (the GET).
	URL string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// Header holds static headers for the GET and every POST; they replace
	// the defaults of the same name. A message's side channel is sent on
	// its POST after them (its trace context, say), but for Streamable
	// HTTP's session headers: this transport has none; the side channel's
	// session id names the endpoint the message belongs to (see the type's
	// documentation).
	Header http.Header
	// ToClient receives the messages read from the stream (and from POST
	// bodies that carry any). nil discards them.
	ToClient Sink
	// MaxMessageSize bounds one message; 0 means frame.DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxDepth bounds how deeply a message's JSON may nest; 0 means
	// frame.DefaultMaxDepth. A deeper response answers its request with an
	// error; any other deeper message is dropped and logged.
	MaxDepth int
	// FirstEndpointTimeout bounds the start: when no endpoint event has
	// arrived this long after Run began, Run fails. 0 means no bound.
	FirstEndpointTimeout time.Duration
	// EndpointWait is how long Handle waits for an endpoint while the stream
	// is (re)connecting before it gives up with ErrEndpointUnavailable. It
	// also bounds the silence while reading a POST's response. 0 means no
	// bound beyond the caller's context.
	EndpointWait time.Duration
	// IdleTimeout is how long the stream may stay silent before it is
	// dropped and reconnected; 0 means no bound.
	IdleTimeout time.Duration
	// StartAttempts bounds the GETs Run makes before the first endpoint:
	// when that many have failed, Run fails with the last failure. 0 means
	// no bound but FirstEndpointTimeout. A one-shot check sets 1.
	StartAttempts int
	// AuthLater says a token may arrive while Run is starting (an OAuth
	// sign-in under way): a 401 or 403 to the first GET is then tried again
	// like a transient failure, instead of ending Run at once.
	AuthLater bool
	// ReconnectDelay returns the wait before reconnect attempt n (1 for the
	// first after a drop, counting up while attempts keep failing). nil
	// means one second every time.
	ReconnectDelay func(attempt int) time.Duration
	// FollowRedirects lets a redirect lead to another origin than URL's,
	// and an endpoint event name an endpoint there, as
	// [StreamableClient.FollowRedirects] says: the requests go there
	// without Authorization, Cookie or any of Header's fields. Without it
	// a redirect is refused with a *[RedirectError], and an endpoint on
	// another origin too (before the first endpoint, Run fails with it);
	// a redirect or an endpoint from https to plain http always is.
	FollowRedirects bool
	// Budget, when set, counts the server's messages while they are read
	// and delivered, as [StreamableClient.Budget] says. An event of the
	// stream it cannot take is skipped, and the stream goes on: the
	// request it answers, when its id shows before its bulk, fails with a
	// *frame.SendError matching frame.ErrOverBudget (else the event is
	// logged as skipped); the other requests in flight are not affected.
	Budget *frame.Budget
	// Remedy, when set, says what the user can do about a failure the
	// client logs itself (an event skipped for the budget); its answer
	// ends the warning.
	Remedy func(err error) string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger

	initOnce sync.Once
	ready    chan struct{} // closed at the first endpoint
	// fallbackFrom is the Streamable HTTP POST's refusal that made [Auto]
	// switch to this client; set before Run starts, nil otherwise.
	fallbackFrom *frame.StatusError

	mu       sync.Mutex
	endpoint string        // where to POST; "" while there is none
	gen      uint64        // counts dropped streams; an endpoint belongs to the current one
	changed  chan struct{} // closed when an endpoint arrives or Run ends; then replaced
	stopped  bool          // Run has returned
	gotFirst bool
	failed   error                   // why Run failed, once it has
	waiting  map[frame.ID]chan error // requests awaiting their response on the stream
	abandon  context.CancelCauseFunc // ends the current stream early
}

// ErrEndpointUnavailable means no SSE endpoint was known in time to POST a
// message: the stream stayed down or reconnecting for EndpointWait, or the
// client stopped. It comes wrapped in a *frame.SendError with Sent false,
// and matches frame.ErrUnavailable: the wait is already over, so the retry
// stage does not start another.
var ErrEndpointUnavailable error = unavailableError("SSE endpoint unavailable")

// StartError reports why the HTTP+SSE stream never offered an endpoint:
// [SSEClient.Run] returns it, and every later [SSEClient.Handle] fails with
// it, wrapped in a *frame.SendError with Sent false. It matches
// frame.ErrUnavailable (the wait is over: the retry stage does not start
// another), and unwraps to Status and Err.
type StartError struct {
	// URL is the stream's URL.
	URL string
	// Status is set when the server refused the GET with a status that
	// asking again will not change — a 4xx other than 408, 409, 425 and 429
	// (and, while a token may still arrive, 401 and 403; see
	// SSEClient.AuthLater): Run then fails at once.
	Status *frame.StatusError
	// PostStatus is, when [Auto] fell back to HTTP+SSE, the refusal of the
	// Streamable HTTP POST that made it do so.
	PostStatus *frame.StatusError
	// Err is the failure otherwise: no endpoint within FirstEndpointTimeout,
	// or the last failed GET once StartAttempts were spent.
	Err error
}

func (e *StartError) Error() string {
	switch {
	case e.Status != nil && e.PostStatus != nil:
		return fmt.Sprintf("the Streamable HTTP POST was refused with HTTP %d and the HTTP+SSE GET with HTTP %d", e.PostStatus.Code, e.Status.Code)
	case e.Status != nil:
		return fmt.Sprintf("the HTTP+SSE GET was refused with HTTP %d", e.Status.Code)
	case e.Err != nil:
		return e.Err.Error()
	}
	return ErrEndpointUnavailable.Error()
}

func (e *StartError) Unwrap() []error {
	var errs []error
	if e.Status != nil {
		errs = append(errs, e.Status)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func (e *StartError) Is(target error) bool { return target == frame.ErrUnavailable }

// StreamStartFailure returns Status, PostStatus and Err: it is how
// package mw, which does not import the transport, recognises a stream
// that never offered an endpoint (mw.StreamStartFailure) to explain it.
func (e *StartError) StreamStartFailure() (get, post *frame.StatusError, err error) {
	return e.Status, e.PostStatus, e.Err
}

// definiteRefusal reports whether a status answering the first GET will
// not change when asked again.
func definiteRefusal(code int, authLater bool) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	case http.StatusUnauthorized, http.StatusForbidden:
		return !authLater
	}
	return code >= 400 && code <= 499
}

// unavailableError is an error that matches frame.ErrUnavailable.
type unavailableError string

func (e unavailableError) Error() string        { return string(e) }
func (e unavailableError) Is(target error) bool { return target == frame.ErrUnavailable }

// errStaleEndpoint means the stream an endpoint came from dropped before a
// request could be registered on it.
var errStaleEndpoint = errors.New("stale SSE endpoint")

// defaultReconnectDelay is the wait between reconnects when ReconnectDelay
// is nil.
const defaultReconnectDelay = time.Second

func (c *SSEClient) init() {
	c.initOnce.Do(func() {
		c.ready = make(chan struct{})
		c.changed = make(chan struct{})
		c.waiting = make(map[frame.ID]chan error)
	})
}

// Ready returns a channel closed once the first endpoint event has arrived.
func (c *SSEClient) Ready() <-chan struct{} {
	c.init()
	return c.ready
}

// Run connects the stream and keeps it connected until ctx ends, then
// returns nil. It fails with a *[StartError] when no endpoint event arrived
// within FirstEndpointTimeout of the start (failed attempts are retried
// until then, or until StartAttempts have failed), at once when the first
// GET could not be sent at all (a *frame.SendError with Sent false: the
// connection refused, the host name not resolved — the server was never
// reached, and is not waited for), at once when the
// server refuses the first GET with a status that asking again will not
// change (see StartError.Status): a wrong URL; and at once when the GET is
// redirected, or the stream names an endpoint, where FollowRedirects does
// not let it go (StartError.Err is then the *RedirectError). Every Handle
// fails with that error from then on. After the first endpoint it
// reconnects forever: on a non-2xx answer, at the end of the stream, on an
// error or after IdleTimeout of silence, it forgets the endpoint, fails the
// requests still waiting on the stream with a *frame.SendError wrapping
// frame.ErrStreamEnded, waits ReconnectDelay and connects again.
func (c *SSEClient) Run(ctx context.Context) error {
	c.init()
	defer c.stop()
	base, err := url.Parse(c.URL)
	if err != nil {
		return c.fail(&StartError{URL: c.URL, Err: fmt.Errorf("SSE URL: %w", err)})
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errNoEndpoint := fmt.Errorf("timed out waiting for SSE endpoint event (%v)", c.FirstEndpointTimeout)
	if c.FirstEndpointTimeout > 0 {
		t := time.AfterFunc(c.FirstEndpointTimeout, func() {
			if !c.hadEndpoint() {
				cancel(errNoEndpoint)
			}
		})
		defer t.Stop()
	}
	startFailed := func(err error) error {
		return c.fail(&StartError{URL: c.URL, PostStatus: c.fallbackFrom, Err: err})
	}
	log := c.logger()
	lastFailure := "" // the failure of the streak of failed attempts so far
	reached := false  // the server has answered (or taken) a GET
	for attempt := 1; ; attempt++ {
		streamCtx, abandon := context.WithCancelCause(runCtx)
		c.mu.Lock()
		c.abandon = abandon
		c.mu.Unlock()
		got, err := c.stream(streamCtx, base)
		abandon(nil)
		c.dropStream()
		if got {
			attempt = 1
			lastFailure = ""
		}
		if ctx.Err() != nil {
			return nil
		}
		if context.Cause(runCtx) == errNoEndpoint {
			return startFailed(errNoEndpoint)
		}
		var st *frame.StatusError
		isStatus := errors.As(err, &st)
		_, redirected := redirectRefused(err)
		var se *frame.SendError
		neverSent := errors.As(err, &se) && !se.Sent
		reached = reached || got || !neverSent
		if !c.hadEndpoint() {
			if !reached {
				// Nothing there (refused, a name that does not resolve):
				// the server was never reached, and is not waited for.
				return startFailed(err)
			}
			if isStatus && definiteRefusal(st.Code, c.AuthLater) {
				return c.fail(&StartError{URL: c.URL, Status: st, PostStatus: c.fallbackFrom})
			}
			if redirected {
				return startFailed(err)
			}
			if c.StartAttempts > 0 && attempt >= c.StartAttempts {
				return startFailed(err)
			}
		}
		// The first failure of a streak is a warning; the same failure
		// again, a second later, is not news.
		var msg string
		var attrs []any
		switch {
		case context.Cause(streamCtx) == errEndpointGone:
			log.Info("the SSE endpoint forgot its session; reconnecting for a new one")
		case isStatus:
			msg = fmt.Sprintf("SSE connection failed: HTTP %d", st.Code)
		case errors.Is(err, frame.ErrStreamEnded):
			log.Info("SSE stream ended; reconnecting")
		default:
			msg, attrs = "SSE stream failed; reconnecting", []any{"err", err}
		}
		if msg != "" {
			failure, level := fmt.Sprint(msg, attrs), slog.LevelWarn
			if failure == lastFailure {
				level = slog.LevelDebug
			}
			log.Log(context.Background(), level, msg, append(attrs, "attempt", attempt)...)
			lastFailure = failure
		}
		if frame.Sleep(runCtx, c.reconnectDelay(attempt)) != nil {
			if ctx.Err() != nil {
				return nil
			}
			return startFailed(errNoEndpoint)
		}
	}
}

// fail records why Run failed, for the Handle calls to come, and returns
// it.
func (c *SSEClient) fail(err error) error {
	c.mu.Lock()
	c.failed = err
	c.mu.Unlock()
	return err
}

// stream runs one GET until it ends and reports whether it published an
// endpoint. A clean end of stream is reported as frame.ErrStreamEnded.
func (c *SSEClient) stream(ctx context.Context, base *url.URL) (gotEndpoint bool, err error) {
	x, err := newOutgoing(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return false, err
	}
	defer x.close()
	x.req.Header.Set("Accept", acceptSSE)
	x.header(c.Header)
	resp, err := x.do(c.Client, c.redirects())
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body := x.body(resp, c.IdleTimeout)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return false, statusError(resp, body)
	}
	log := c.logger()
	counted := newSSEBudget(body, c.Budget)
	defer counted.release()
	rd := frame.NewSSEReader(counted.reader(body), c.maxSize())
	hdr := resp.Header // the side channel of the messages on this stream
	skipped := 0
	for {
		ev, err := rd.Next()
		if errors.Is(err, frame.ErrOverBudget) && counted != nil && ctx.Err() == nil {
			raw, serr := counted.skip()
			skipped++
			id, request := eventID(raw)
			if request {
				id = "" // the server's request: no request of ours waits for it
			}
			c.refuse(id, skipped)
			err = serr
			rd = frame.NewSSEReader(counted, c.maxSize()) // goes on after the skipped event
			if err == nil {
				continue
			}
		}
		if err != nil {
			switch {
			case err == io.EOF:
				return gotEndpoint, frame.ErrStreamEnded
			case errors.Is(err, frame.ErrTooLarge) && ctx.Err() == nil:
				return gotEndpoint, fmt.Errorf("SSE event over %d bytes: %w", c.maxSize(), frame.ErrTooLarge)
			}
			return gotEndpoint, x.fail(err)
		}
		switch ev.Type {
		case "endpoint":
			ref := strings.TrimSpace(string(ev.Data))
			u, err := base.Parse(ref)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				log.Warn("ignoring unusable SSE endpoint", "endpoint", snippet(ev.Data))
				continue
			}
			if err := c.redirects().judge(base, u, 0); err != nil {
				return gotEndpoint, err
			}
			if !sameOrigin(base, u) {
				log.Warn("SSE endpoint is on another origin: its POSTs go without credentials", "stream", origin(base.String()), "endpoint", origin(u.String()))
			}
			ep := u.String()
			c.publish(ep)
			gotEndpoint = true
			hdr = resp.Header.Clone()
			hdr.Set(frame.HeaderSessionID, ep)
		case "message":
			m, ok := eventMessage(log, frame.Parser{MaxDepth: c.MaxDepth}, ev)
			if !ok {
				continue
			}
			if err := c.deliver(ctx, m.WithHeaders(hdr)); err != nil {
				log.Error("could not deliver a message from the SSE stream", "err", err)
			}
		}
	}
}

// refuse fails the request an event the budget refused answers (id, ""
// when it did not show), or logs the event as skipped when no request
// waits for it: the first of a stream at warning level, the next ones at
// debug. n counts the events skipped on the stream.
func (c *SSEClient) refuse(id frame.ID, n int) {
	err := overBudgetError(c.Budget)
	c.mu.Lock()
	ch, ok := c.waiting[id]
	if ok && id != "" {
		delete(c.waiting, id)
	}
	c.mu.Unlock()
	if ok && id != "" {
		ch <- &frame.SendError{Sent: true, Err: err}
		return
	}
	msg := "skipped a message of the SSE stream: " + err.Error()
	if c.Remedy != nil {
		if remedy := c.Remedy(err); remedy != "" {
			msg += "; " + remedy
		}
	}
	level := slog.LevelWarn
	if n > 1 {
		level = slog.LevelDebug
	}
	c.logger().Log(context.Background(), level, msg, "id", id.String(), "skipped", n)
}

// publish makes ep the endpoint to POST to.
func (c *SSEClient) publish(ep string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endpoint = ep
	if !c.gotFirst {
		c.gotFirst = true
		close(c.ready)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *SSEClient) hadEndpoint() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gotFirst
}

// dropStream forgets the endpoint of a stream that ended and fails the
// requests that were waiting on it.
func (c *SSEClient) dropStream() {
	c.mu.Lock()
	c.endpoint = ""
	c.gen++
	waiting := c.waiting
	c.waiting = make(map[frame.ID]chan error)
	c.mu.Unlock()
	for _, ch := range waiting {
		ch <- &frame.SendError{Sent: true, Err: frame.ErrStreamEnded}
	}
}

// errEndpointGone ends a stream whose endpoint answered a POST with 404.
var errEndpointGone = errors.New("SSE endpoint gone")

// abandonEndpoint drops the stream that published ep, if it is still the
// current one: an endpoint that answers 404 has lost its session, and only a
// new stream brings a usable one. The endpoint is forgotten at once, so
// nothing more is posted to it while the stream winds down.
func (c *SSEClient) abandonEndpoint(ep string) {
	c.mu.Lock()
	current := c.endpoint == ep && ep != ""
	abandon := c.abandon
	c.mu.Unlock()
	if !current {
		return
	}
	c.dropStream()
	if abandon != nil {
		abandon(errEndpointGone)
	}
}

// stop marks Run as ended and wakes everybody waiting for an endpoint.
func (c *SSEClient) stop() {
	c.dropStream()
	c.mu.Lock()
	c.stopped = true
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// deliver hands m to ToClient, then wakes the requests it answers.
func (c *SSEClient) deliver(ctx context.Context, m frame.Message) error {
	var woken []chan error
	c.mu.Lock()
	eachResponseID(m, func(id frame.ID) bool {
		if ch, ok := c.waiting[id]; ok {
			delete(c.waiting, id)
			woken = append(woken, ch)
		}
		return true
	})
	c.mu.Unlock()
	var err error
	if c.ToClient != nil {
		err = c.ToClient.Handle(ctx, m)
	}
	for _, ch := range woken {
		ch <- err
	}
	return err
}

// Handle POSTs m to the current endpoint, first waiting up to EndpointWait
// for one while the stream (re)connects; without one it fails with a
// *frame.SendError{Sent: false} wrapping ErrEndpointUnavailable, or, once
// Run has failed, the *[StartError] it failed with. Headers are
// Content-Type: application/json and Accept: application/json,
// text/event-stream, then c.Header, then m.Header() but for Streamable
// HTTP's session headers, Mcp-Session-Id and MCP-Protocol-Version (on this
// transport the endpoint URL is the session; the side channel's session
// id only names the endpoint m belongs to).
//
// A 2xx is success; if its body holds JSON-RPC messages they are delivered
// too. Any other status is a *frame.StatusError. For a request, Handle then
// waits for the response with m's id to come down the stream and returns
// nil once it has been delivered to ToClient; if the stream drops first it
// returns a *frame.SendError{Sent: true} wrapping frame.ErrStreamEnded, and
// if ctx ends first, ctx.Err(). Two requests with the same id may not be in
// flight at once.
func (c *SSEClient) Handle(ctx context.Context, m frame.Message) error {
	c.init()
	var wait endpointWait
	defer wait.stop()
	id := m.ID()
	isReq := m.IsRequest()
	var ep string
	var answer chan error
	for {
		e, gen, err := c.waitEndpoint(ctx, &wait)
		if err != nil {
			return err
		}
		if s := m.Header().Get(frame.HeaderSessionID); s != "" && s != e {
			return &frame.StatusError{Code: http.StatusNotFound, Body: []byte("the HTTP+SSE session ended with its stream")}
		}
		if !isReq {
			ep = e
			break
		}
		answer, err = c.register(id, gen)
		if err == errStaleEndpoint {
			continue
		}
		if err != nil {
			return err
		}
		ep = e
		break
	}
	answered, err := c.post(ctx, ep, m)
	if !isReq {
		return err
	}
	if err != nil || answered {
		if !c.unregister(id, answer) && err != nil {
			// The stream took the waiter meanwhile: either the response is
			// being delivered (then that is the outcome) or the stream
			// dropped (then the POST's own failure is the truer one).
			if werr := c.await(ctx, id, answer); !errors.Is(werr, frame.ErrStreamEnded) {
				return werr
			}
		}
		return err
	}
	return c.await(ctx, id, answer)
}

// await waits for the stream to answer request id.
func (c *SSEClient) await(ctx context.Context, id frame.ID, answer chan error) error {
	select {
	case err := <-answer:
		return err
	case <-ctx.Done():
		c.unregister(id, answer)
		return ctx.Err()
	}
}

// endpointWait is the EndpointWait deadline of one Handle call, started
// only if the call has to wait.
type endpointWait struct{ t *time.Timer }

// expired returns the channel that fires at the deadline (nil: never),
// starting the clock on first use.
func (w *endpointWait) expired(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	if w.t == nil {
		w.t = time.NewTimer(d)
	}
	return w.t.C
}

func (w *endpointWait) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// waitEndpoint returns the current endpoint and its stream, waiting for one
// until the EndpointWait deadline or ctx.
func (c *SSEClient) waitEndpoint(ctx context.Context, wait *endpointWait) (string, uint64, error) {
	for {
		c.mu.Lock()
		ep, gen, changed, stopped, failed := c.endpoint, c.gen, c.changed, c.stopped, c.failed
		c.mu.Unlock()
		if ep != "" {
			return ep, gen, nil
		}
		if failed != nil {
			return "", 0, &frame.SendError{Sent: false, Err: failed}
		}
		if stopped {
			return "", 0, &frame.SendError{Sent: false, Err: ErrEndpointUnavailable}
		}
		select {
		case <-changed:
		case <-wait.expired(c.EndpointWait):
			return "", 0, &frame.SendError{Sent: false, Err: ErrEndpointUnavailable}
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
	}
}

// register records that request id awaits its response on stream gen.
func (c *SSEClient) register(id frame.ID, gen uint64) (chan error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.endpoint == "" {
		return nil, errStaleEndpoint
	}
	if _, dup := c.waiting[id]; dup {
		return nil, &frame.SendError{Sent: false, Err: fmt.Errorf("request id %s is already in flight", id)}
	}
	ch := make(chan error, 1)
	c.waiting[id] = ch
	return ch, nil
}

// unregister forgets the waiter for id if it is still ch and reports
// whether it did.
func (c *SSEClient) unregister(id frame.ID, ch chan error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting[id] == ch {
		delete(c.waiting, id)
		return true
	}
	return false
}

// post sends m to ep and delivers any messages the answer's body carries,
// reporting whether they include the response to m.
func (c *SSEClient) post(ctx context.Context, ep string, m frame.Message) (answered bool, err error) {
	x, err := newOutgoing(ctx, http.MethodPost, ep, m.Bytes())
	if err != nil {
		return false, err
	}
	defer x.close()
	x.req.Header.Set("Content-Type", contentTypeJSON)
	x.req.Header.Set("Accept", acceptPOST) // as on Streamable HTTP; strict servers answer 406 without it
	x.header(c.Header, m.Header())
	x.req.Header.Del(frame.HeaderSessionID) // Streamable HTTP's session headers
	x.req.Header.Del(frame.HeaderProtocolVersion)
	policy := c.redirects()
	if base, err := url.Parse(c.URL); err != nil || !sameOrigin(base, x.req.URL) {
		policy.strip(x.req.Header) // an endpoint elsewhere, under FollowRedirects
	}
	resp, err := x.do(c.Client, policy)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body := x.body(resp, c.EndpointWait)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if resp.StatusCode == http.StatusNotFound {
			c.abandonEndpoint(ep)
		}
		return false, statusError(resp, body)
	}
	if !strings.Contains(strings.ToLower(resp.Header.Get("Content-Type")), "json") {
		drain(body)
		return false, nil
	}
	b, held, err := readBodyCounted(body, resp.ContentLength, c.maxSize(), c.Budget)
	if errors.Is(err, frame.ErrOverBudget) && ctx.Err() == nil {
		return false, &frame.SendError{Sent: true, Err: overBudgetError(c.Budget)}
	}
	if err != nil {
		// The message was accepted; a body we cannot read does not undo that.
		c.logger().Warn("could not read the body of an SSE POST answer", "err", err)
		return false, nil
	}
	defer c.Budget.Release(held) // once delivered
	reply, err := frame.Parser{MaxDepth: c.MaxDepth}.ParseOwned(b)
	if err == nil {
		err = reply.Err()
	}
	if s, ok := standIn(err); ok {
		c.logger().Warn("the server's response is not valid JSON-RPC; its request gets an error", "id", s.ID().String(), "reason", err, "start", snippet(b))
		reply, err = s, nil
	}
	if err != nil {
		if err != frame.ErrEmpty {
			c.logger().Warn("ignoring SSE POST answer that is not JSON-RPC", "size", len(b), "start", snippet(b))
		}
		return false, nil
	}
	hdr := resp.Header.Clone()
	hdr.Set(frame.HeaderSessionID, ep)
	if err := c.deliver(ctx, reply.WithHeaders(hdr)); err != nil {
		return false, err
	}
	return m.IsRequest() && answers(reply, m.ID()), nil
}

func (c *SSEClient) reconnectDelay(attempt int) time.Duration {
	if c.ReconnectDelay != nil {
		return c.ReconnectDelay(attempt)
	}
	return defaultReconnectDelay
}

// redirects returns the client's redirect policy.
func (c *SSEClient) redirects() redirectPolicy {
	return redirectPolicy{crossOrigin: c.FollowRedirects, static: c.Header}
}

func (c *SSEClient) maxSize() int {
	if c.MaxMessageSize > 0 {
		return c.MaxMessageSize
	}
	return frame.DefaultMaxMessageSize
}

func (c *SSEClient) logger() *slog.Logger { return orDiscard(c.Logger) }
