package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// StreamableClient is the client side of MCP's Streamable HTTP transport
// (revisions 2025-03-26 to 2025-11-25, and the per-request exchange of
// 2026-07-28). Each message is its own POST; the server answers with JSON or
// with an event stream carrying related messages and then the response.
// [StreamableClient.Listen] opens the standalone GET stream and
// [StreamableClient.EndSession] sends the DELETE that ends a session.
//
// It tracks no session: stages put Mcp-Session-Id, MCP-Protocol-Version and
// the like in a message's side channel ([frame.Message.Header]) and read them
// back from the response headers attached to what is delivered.
//
// Set the fields before first use and do not change them afterwards. The
// methods are safe for concurrent use.
type StreamableClient struct {
	// URL is the MCP endpoint, used exactly as given.
	URL string
	// Client sends the requests; nil means http.DefaultClient. Build it with
	// [NewHTTPClient].
	Client *http.Client
	// Header holds static headers for every request (-H entries, a bearer
	// token). They replace the defaults of the same name and are replaced
	// in turn by a message's side channel.
	Header http.Header
	// ToClient receives the messages read from the server, each carrying the
	// headers of the response that brought it. nil discards them.
	ToClient Sink
	// MaxMessageSize bounds one message (one JSON body, one event); 0 means
	// frame.DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxDepth bounds how deeply a message's JSON may nest; 0 means
	// frame.DefaultMaxDepth. A deeper response answers its request with an
	// error; any other deeper message is dropped and logged.
	MaxDepth int
	// IdleTimeout bounds the silence while reading a POST's response body:
	// when no byte arrives for this long the request fails. 0 means no
	// bound. (Waiting for the response headers is bounded by the
	// http.Client; see HTTPOptions.ReadTimeout.)
	IdleTimeout time.Duration
	// StreamIdleTimeout is IdleTimeout for the GET stream; 0 means none.
	StreamIdleTimeout time.Duration
	// FollowRedirects lets a redirect (307 or 308; the others are never
	// followed) lead to another origin than URL's: the request then goes
	// there without Authorization, Cookie or any of Header's fields (and an
	// OAuth token is not added; see auth.Transport.Origin). Without it such
	// a redirect is refused with a *[RedirectError], and so, always, is one
	// from https to plain http. A redirect within the origin is followed,
	// with every header.
	FollowRedirects bool
	// Budget, when set, counts the server's messages while they are read
	// and delivered: a JSON body's buffer, and an event's as its stream
	// brings it, once frame.BudgetMin bytes or more (see frame.Budget). A
	// message it cannot take fails the request it came for with a
	// *frame.SendError matching frame.ErrOverBudget; on the GET stream it
	// is skipped, with a warning, and the stream goes on. The other
	// requests in flight are not affected.
	Budget *frame.Budget
	// Remedy, when set, says what the user can do about a failure the
	// client logs itself (a message of the GET stream skipped for the
	// budget); its answer ends the warning.
	Remedy func(err error) string
	// Sleep waits d or until ctx is done, returning ctx's error then: the
	// wait before a POST's event stream is resumed. nil means frame.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Default request headers. A message POST accepts both answer shapes.
const (
	contentTypeJSON = "application/json"
	acceptPOST      = "application/json, text/event-stream"
	acceptSSE       = "text/event-stream"
)

// Handle POSTs m, exactly its bytes, and hands whatever the server sends
// back to ToClient. Headers are, later ones winning: Content-Type and Accept
// defaults, then c.Header, then m.Header().
//
// For a request, Handle returns nil once the response to m's id has been
// delivered; a 2xx without a body (202 Accepted, say) is reported as an
// error wrapping frame.ErrAnswerElsewhere: the answer, if any, comes on
// another stream. A stream or JSON body that ends without that response
// yields a *frame.SendError wrapping frame.ErrStreamEnded. For a
// notification or response, Handle returns after the server's answer has
// been read. See the package documentation for the other outcomes. When ctx
// ends the request is abandoned at once and ctx.Err() returned.
func (c *StreamableClient) Handle(ctx context.Context, m frame.Message) error {
	_, err := c.post(ctx, m)
	return err
}

// post is Handle, also returning the HTTP status (0 when none arrived).
func (c *StreamableClient) post(ctx context.Context, m frame.Message) (int, error) {
	x, err := newOutgoing(ctx, http.MethodPost, c.URL, m.Bytes())
	if err != nil {
		return 0, err
	}
	defer x.close()
	x.req.Header.Set("Content-Type", contentTypeJSON)
	x.req.Header.Set("Accept", acceptPOST)
	x.header(c.Header, m.Header())
	resp, err := x.do(c.Client, c.redirects())
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body := x.body(resp, c.IdleTimeout)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, statusError(resp, body)
	}
	var want frame.ID
	if m.IsRequest() {
		want = m.ID()
	}
	if ct := resp.Header.Get("Content-Type"); !isEventStream(ct) {
		err := c.readJSON(x, resp, body, ct, want)
		if errors.Is(err, errEmptyBody) {
			if want == "" {
				return resp.StatusCode, nil
			}
			return resp.StatusCode, fmt.Errorf("HTTP %d without a body: %w", resp.StatusCode, frame.ErrAnswerElsewhere)
		}
		return resp.StatusCode, err
	}
	return resp.StatusCode, c.readEvents(x, resp, body, m.Header(), want)
}

// readEvents delivers the messages of a POST's event stream until the
// response to want (when want is set) or the end of the stream. A stream
// that ends or breaks before the response after it numbered its events is
// resumed (see resume); h is the POST's side channel, which the GET that
// resumes it carries too.
func (c *StreamableClient) readEvents(x *outgoing, resp *http.Response, body io.Reader, h http.Header, want frame.ID) error {
	counted := newSSEBudget(body, c.Budget)
	defer counted.release()
	rd := frame.NewSSEReader(counted.reader(body), c.maxSize())
	answered, err, failed := c.pump(x, resp, rd, want)
	switch {
	case failed != nil:
		return failed
	case answered:
		return nil
	case err == io.EOF && want == "":
		return nil
	case want != "" && resumable(x, err) && rd.LastEventID() != "":
		return c.resume(x.ctx, h, want, rd.LastEventID(), rd.Retry())
	case err == io.EOF:
		return &frame.SendError{Sent: true, Err: frame.ErrStreamEnded}
	}
	return c.readError(x, err)
}

// pump delivers the messages of an event stream until the response to want
// (then it reads the stream's tail, see finishStream, and reports
// answered), until reading the stream fails (readErr; io.EOF at its end),
// or until a delivery fails (failed).
func (c *StreamableClient) pump(x *outgoing, resp *http.Response, rd *frame.SSEReader, want frame.ID) (answered bool, readErr, failed error) {
	for {
		ev, err := rd.Next()
		if err != nil {
			return false, err, nil
		}
		msg, ok := eventMessage(c.logger(), c.parser(), ev)
		if !ok {
			continue
		}
		if err := c.deliver(x.ctx, msg.WithHeaders(resp.Header)); err != nil {
			return false, nil, err
		}
		if want != "" && answers(msg, want) {
			c.finishStream(x, resp, rd)
			return true, nil, nil
		}
	}
}

// resumable reports whether a POST's event stream that stopped with err may
// be resumed: it ended, or its connection broke, while its caller still
// waits. A message over the size limit or the budget, and a stream gone
// idle past IdleTimeout, are not.
func resumable(x *outgoing, err error) bool {
	if err == io.EOF {
		return true
	}
	if x.ctx.Err() != nil || errors.Is(err, frame.ErrTooLarge) || errors.Is(err, frame.ErrOverBudget) {
		return false
	}
	var idle *IdleTimeoutError
	return !errors.As(context.Cause(x.reqCtx), &idle)
}

// DefaultResumeDelay is how long the client waits before it resumes a
// POST's event stream whose server named no retry delay.
const DefaultResumeDelay = time.Second

// maxIdleResumes bounds the GETs in a row that resume a POST's event stream
// without bringing a new event.
const maxIdleResumes = 3

// resume carries on a POST's event stream that ended or broke before the
// response to want, once it had numbered its events (the server closes it
// to have the client poll, or the connection dropped): it waits the
// stream's retry delay (DefaultResumeDelay when it named none), GETs the
// stream again with Last-Event-ID and h's headers, and reads on until the
// response. It resumes again for as long as each GET brings a new event,
// and for at most maxIdleResumes GETs in a row that bring none. A GET the
// server refuses, or that is not answered with an event stream, ends it
// with a *frame.SendError wrapping frame.ErrStreamEnded.
func (c *StreamableClient) resume(ctx context.Context, h http.Header, want frame.ID, last string, delay time.Duration) error {
	idle := 0
	for {
		if delay <= 0 {
			delay = DefaultResumeDelay
		}
		c.logger().Debug("resuming the event stream", "id", want.String(), "last_event_id", last, "after", delay)
		if err := c.sleep(ctx, delay); err != nil {
			return err
		}
		answered, next, retry, err := c.resumeOnce(ctx, h, want, last)
		switch {
		case answered:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, frame.ErrOverBudget):
			return err // the resumed stream brought a message the budget cannot take
		case isRedirectRefusal(err):
			return err
		case err != nil:
			return &frame.SendError{Sent: true, Err: fmt.Errorf("%w; resuming it failed: %v", frame.ErrStreamEnded, err)}
		}
		if next == last {
			idle++
			if idle >= maxIdleResumes {
				return &frame.SendError{Sent: true, Err: fmt.Errorf("%w; %d attempts to resume it brought nothing new", frame.ErrStreamEnded, idle)}
			}
		} else {
			idle = 0
		}
		last = next
		if retry > 0 {
			delay = retry
		}
	}
}

// resumeOnce GETs a POST's event stream after event last and reads it, as
// readEvents does, until the response to want or the stream's end. It
// returns the stream's last event id and retry delay then; err is nil when
// the stream may be resumed again, else why not (a failed delivery among
// them).
func (c *StreamableClient) resumeOnce(ctx context.Context, h http.Header, want frame.ID, last string) (answered bool, lastID string, retry time.Duration, err error) {
	x, err := newOutgoing(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return false, last, 0, err
	}
	defer x.close()
	x.req.Header.Set("Accept", acceptSSE)
	x.header(c.Header, h)
	x.req.Header.Set(frame.HeaderLastEventID, last)
	resp, err := x.do(c.Client, c.redirects())
	if err != nil {
		return false, last, 0, err
	}
	defer resp.Body.Close()
	body := x.body(resp, c.IdleTimeout)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return false, last, 0, statusError(resp, body)
	}
	if ct := resp.Header.Get("Content-Type"); !isEventStream(ct) {
		drain(body)
		return false, last, 0, fmt.Errorf("GET answered HTTP %d with Content-Type %q, not an event stream", resp.StatusCode, ct)
	}
	counted := newSSEBudget(body, c.Budget)
	defer counted.release()
	rd := frame.NewSSEReader(counted.reader(body), c.maxSize())
	answered, err, failed := c.pump(x, resp, rd, want)
	if id := rd.LastEventID(); id != "" {
		last = id
	}
	if answered {
		return true, last, 0, nil
	}
	if failed != nil {
		return false, last, 0, failed
	}
	if !resumable(x, err) {
		return false, last, 0, c.readError(x, err)
	}
	return false, last, rd.Retry(), nil
}

func (c *StreamableClient) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return frame.Sleep(ctx, d)
}

// streamTailWait bounds how long a POST's event stream is read past the
// response it was waiting for.
const streamTailWait = 250 * time.Millisecond

// finishStream reads a POST's event stream to its end once the response has
// been delivered, so that the connection can carry the next request instead
// of being torn down (a server ends the stream right after the response,
// and the end is usually already in the buffer). Anything else the server
// sends meanwhile is still delivered; a server that keeps the stream open
// is cut off after streamTailWait.
func (c *StreamableClient) finishStream(x *outgoing, resp *http.Response, rd *frame.SSEReader) {
	t := time.AfterFunc(streamTailWait, func() { x.cancel(errStreamTail) })
	defer t.Stop()
	for {
		ev, err := rd.Next()
		if err != nil {
			return
		}
		if msg, ok := eventMessage(c.logger(), c.parser(), ev); ok {
			if c.deliver(x.ctx, msg.WithHeaders(resp.Header)) != nil {
				return
			}
		}
	}
}

// errStreamTail ends the read of a stream kept open after its response.
var errStreamTail = errors.New("event stream kept open after the response")

// errEmptyBody reports a 2xx answer without a body.
var errEmptyBody = errors.New("empty body")

// readJSON delivers a JSON body: one message or one batch; an empty body is
// errEmptyBody.
func (c *StreamableClient) readJSON(x *outgoing, resp *http.Response, body io.Reader, ct string, want frame.ID) error {
	b, held, err := readBodyCounted(body, resp.ContentLength, c.maxSize(), c.Budget)
	if err != nil {
		return c.readError(x, err)
	}
	defer c.Budget.Release(held) // once delivered
	if len(bytes.TrimSpace(b)) == 0 {
		return errEmptyBody
	}
	msg, err := c.parser().ParseOwned(b)
	if err == nil {
		err = msg.Err()
	}
	if s, ok := standIn(err); ok {
		c.logger().Warn("the server's response is not valid JSON-RPC; its request gets an error", "id", s.ID().String(), "reason", err, "start", snippet(b))
		msg = s
	}
	if msg.Kind() == frame.Invalid {
		if ct == "" {
			ct = "none"
		}
		// Debug: the request's failure is the warning (at the edge).
		c.logger().Debug("invalid JSON response", "status", resp.StatusCode, "content_type", ct, "size", len(b), "start", snippet(b))
		return &frame.SendError{Sent: true, Err: fmt.Errorf("invalid JSON response (Content-Type: %s)", ct)}
	}
	if err := c.deliver(x.ctx, msg.WithHeaders(resp.Header)); err != nil {
		return err
	}
	if want != "" && !answers(msg, want) {
		return &frame.SendError{Sent: true, Err: fmt.Errorf("JSON response does not answer request %s: %w", want, frame.ErrStreamEnded)}
	}
	return nil
}

// readError reports an error met while reading a response body.
func (c *StreamableClient) readError(x *outgoing, err error) error {
	if errors.Is(err, frame.ErrTooLarge) && x.ctx.Err() == nil {
		return &frame.SendError{Sent: true, Err: fmt.Errorf("response message over %d bytes: %w", c.maxSize(), frame.ErrTooLarge)}
	}
	if errors.Is(err, frame.ErrOverBudget) && x.ctx.Err() == nil {
		return &frame.SendError{Sent: true, Err: overBudgetError(c.Budget)}
	}
	return x.fail(err)
}

// Listen opens the standalone stream: a GET with Accept: text/event-stream,
// then c.Header, then h (which may carry Mcp-Session-Id, Last-Event-ID and
// the like). Once the server has answered with an event stream it calls
// opened (when not nil), before anything on the stream is delivered; then
// it delivers the stream's messages to ToClient, each with the response
// headers attached, until the stream ends, ctx is done or the stream is
// silent for StreamIdleTimeout.
//
// It returns the stream's last event id (h's Last-Event-ID when the stream
// set none) and why the stream ended: nil at a clean end of stream; a
// *frame.StatusError when the server refused it (405: it offers no stream) or
// answered something other than an event stream; ctx.Err() when ctx ended;
// a *frame.SendError when the stream broke or went idle.
func (c *StreamableClient) Listen(ctx context.Context, h http.Header, opened func()) (lastEventID string, err error) {
	lastEventID = h.Get(frame.HeaderLastEventID)
	x, err := newOutgoing(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return lastEventID, err
	}
	defer x.close()
	x.req.Header.Set("Accept", acceptSSE)
	x.header(c.Header, h)
	resp, err := x.do(c.Client, c.redirects())
	if err != nil {
		return lastEventID, err
	}
	defer resp.Body.Close()
	body := x.body(resp, c.StreamIdleTimeout)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return lastEventID, statusError(resp, body)
	}
	if ct := resp.Header.Get("Content-Type"); !isEventStream(ct) {
		st := statusError(resp, body)
		return lastEventID, fmt.Errorf("GET stream answered HTTP %d with Content-Type %q, not an event stream: %w", resp.StatusCode, ct, st)
	}
	if opened != nil {
		opened()
	}
	counted := newSSEBudget(body, c.Budget)
	defer counted.release()
	rd := frame.NewSSEReader(counted.reader(body), c.maxSize())
	skipped := 0
	for {
		ev, err := rd.Next()
		if id := rd.LastEventID(); id != "" {
			lastEventID = id
		}
		if errors.Is(err, frame.ErrOverBudget) && counted != nil && ctx.Err() == nil {
			raw, serr := counted.skip()
			skipped++
			id, _ := eventID(raw)
			c.logSkipped(skipped, id)
			err = serr
			rd = frame.NewSSEReader(counted, c.maxSize()) // goes on after the skipped event
			if err == nil {
				continue
			}
		}
		if err != nil {
			if err == io.EOF {
				return lastEventID, nil
			}
			return lastEventID, c.readError(x, err)
		}
		msg, ok := eventMessage(c.logger(), c.parser(), ev)
		if !ok {
			continue
		}
		if err := c.deliver(ctx, msg.WithHeaders(resp.Header)); err != nil {
			return lastEventID, err
		}
	}
}

// EndSession sends DELETE with c.Header and then h (which names the
// session). A 2xx, a 404 (already gone) and a 405 (the server does not allow
// it) are success; any other status is a *frame.StatusError.
func (c *StreamableClient) EndSession(ctx context.Context, h http.Header) error {
	x, err := newOutgoing(ctx, http.MethodDelete, c.URL, nil)
	if err != nil {
		return err
	}
	defer x.close()
	x.header(c.Header, h)
	resp, err := x.do(c.Client, c.redirects())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := x.body(resp, c.IdleTimeout)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299,
		resp.StatusCode == http.StatusNotFound,
		resp.StatusCode == http.StatusMethodNotAllowed:
		drain(body)
		return nil
	}
	return statusError(resp, body)
}

// logSkipped reports the n-th message of a GET stream skipped for the
// budget (with its id, when it showed one): the first at warning level,
// the next ones of the same stream at debug.
func (c *StreamableClient) logSkipped(n int, id frame.ID) {
	err := overBudgetError(c.Budget)
	msg := "skipped a message of the GET stream: " + err.Error()
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

// redirects returns the client's redirect policy.
func (c *StreamableClient) redirects() redirectPolicy {
	return redirectPolicy{crossOrigin: c.FollowRedirects, static: c.Header}
}

func (c *StreamableClient) deliver(ctx context.Context, m frame.Message) error {
	if c.ToClient == nil {
		return nil
	}
	return c.ToClient.Handle(ctx, m)
}

func (c *StreamableClient) parser() frame.Parser { return frame.Parser{MaxDepth: c.MaxDepth} }

func (c *StreamableClient) maxSize() int {
	if c.MaxMessageSize > 0 {
		return c.MaxMessageSize
	}
	return frame.DefaultMaxMessageSize
}

func (c *StreamableClient) logger() *slog.Logger { return orDiscard(c.Logger) }

// eventMessage returns the JSON-RPC message a "message" event carries. Other
// event types, and data that is not a valid JSON-RPC message, are skipped
// (the latter logged without its bulk) — except a response whose envelope
// is invalid but whose id is fine, which is replaced by an error for the
// request it answers (see standIn), so that the request is not left
// waiting.
func eventMessage(log *slog.Logger, p frame.Parser, ev frame.Event) (frame.Message, bool) {
	if ev.Type != "message" {
		return frame.Message{}, false
	}
	m, err := p.ParseOwned(ev.Data)
	if err == nil {
		err = m.Err()
	}
	if err != nil {
		if s, ok := standIn(err); ok {
			log.Warn("the server's response is not valid JSON-RPC; its request gets an error", "id", s.ID().String(), "reason", err, "start", snippet(ev.Data))
			return s, true
		}
		log.Warn("skipping event that is not a JSON-RPC message", "size", len(ev.Data), "start", snippet(ev.Data))
		return frame.Message{}, false
	}
	return m, true
}

// orDiscard returns l, or a logger that drops everything when l is nil.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
