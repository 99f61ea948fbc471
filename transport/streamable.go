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
	// IdleTimeout bounds the silence while reading a POST's response body:
	// when no byte arrives for this long the request fails. 0 means no
	// bound. (Waiting for the response headers is bounded by the
	// http.Client; see HTTPOptions.ReadTimeout.)
	IdleTimeout time.Duration
	// StreamIdleTimeout is IdleTimeout for the GET stream; 0 means none.
	StreamIdleTimeout time.Duration
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
// delivered, or once a 2xx with an empty body says the answer will come on
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
	resp, err := x.do(c.Client)
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
		return resp.StatusCode, c.readJSON(x, resp, body, ct, want)
	}
	return resp.StatusCode, c.readEvents(x, resp, body, want)
}

// readEvents delivers the messages of a POST's event stream until the
// response to want (when want is set) or the end of the stream.
func (c *StreamableClient) readEvents(x *outgoing, resp *http.Response, body io.Reader, want frame.ID) error {
	rd := frame.NewSSEReader(body, c.maxSize())
	for {
		ev, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				if want != "" {
					return &frame.SendError{Sent: true, Err: frame.ErrStreamEnded}
				}
				return nil
			}
			return c.readError(x, err)
		}
		msg, ok := eventMessage(c.logger(), ev)
		if !ok {
			continue
		}
		if err := c.deliver(x.ctx, msg.WithHeaders(resp.Header)); err != nil {
			return err
		}
		if want != "" && answers(msg, want) {
			c.finishStream(x, resp, rd)
			return nil
		}
	}
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
		if msg, ok := eventMessage(c.logger(), ev); ok {
			if c.deliver(x.ctx, msg.WithHeaders(resp.Header)) != nil {
				return
			}
		}
	}
}

// errStreamTail ends the read of a stream kept open after its response.
var errStreamTail = errors.New("event stream kept open after the response")

// readJSON delivers a JSON body: one message or one batch.
func (c *StreamableClient) readJSON(x *outgoing, resp *http.Response, body io.Reader, ct string, want frame.ID) error {
	b, err := readBody(body, resp.ContentLength, c.maxSize())
	if err != nil {
		return c.readError(x, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	msg, err := frame.ParseOwned(b)
	if s, ok := standIn(msg.Err()); err == nil && ok {
		c.logger().Warn("the server's response is not valid JSON-RPC; its request gets an error", "id", s.ID().String(), "reason", msg.Err(), "start", snippet(b))
		msg = s
	}
	if err != nil || msg.Kind() == frame.Invalid {
		if ct == "" {
			ct = "none"
		}
		c.logger().Warn("invalid JSON response", "status", resp.StatusCode, "content_type", ct, "size", len(b), "start", snippet(b))
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
	resp, err := x.do(c.Client)
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
	rd := frame.NewSSEReader(body, c.maxSize())
	for {
		ev, err := rd.Next()
		if id := rd.LastEventID(); id != "" {
			lastEventID = id
		}
		if err != nil {
			if err == io.EOF {
				return lastEventID, nil
			}
			return lastEventID, c.readError(x, err)
		}
		msg, ok := eventMessage(c.logger(), ev)
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
	resp, err := x.do(c.Client)
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

func (c *StreamableClient) deliver(ctx context.Context, m frame.Message) error {
	if c.ToClient == nil {
		return nil
	}
	return c.ToClient.Handle(ctx, m)
}

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
func eventMessage(log *slog.Logger, ev frame.Event) (frame.Message, bool) {
	if ev.Type != "message" {
		return frame.Message{}, false
	}
	m, err := frame.ParseOwned(ev.Data)
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
