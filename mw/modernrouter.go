package mw

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
)

// DefaultFirstAnswerWait is how long [ModernRouter] keeps a request's HTTP
// answer unstarted while it waits for the request's first message.
const DefaultFirstAnswerWait = 10 * time.Second

// routerStage names the ids the router mints:
// "mcp-stdio/serve/<random>/<n>".
const routerStage = "serve"

// The gjson paths the router rewrites, and the reason it cancels with.
const (
	paramsProgressTokenPath      = "params.progressToken"
	requestProgressTokenPath     = "params._meta.progressToken"
	routerCancelReasonClientGone = "the client went away"
)

// ModernRouterOptions configures [ModernRouter].
type ModernRouterOptions struct {
	// Conn is the connection of the server behind (a pooled child): when
	// it closes, every request in flight is answered with an error.
	Conn *Conn
	// FirstAnswerWait bounds how long a request's HTTP answer waits for
	// the request's first message before it starts as it is; 0 means
	// DefaultFirstAnswerWait. An error answering the request within it
	// keeps its HTTP status (404 for -32601, 400 for -32602 and the
	// header and version errors of 2026-07-28).
	FirstAnswerWait time.Duration
	// Rand is read once per server for the random part of the ids the
	// router mints (see [IDMinter.Randomize]); nil means crypto/rand.
	// Tests that pin minted ids give a fixed one.
	Rand io.Reader
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// ModernRouter is the stage nearest the client in front of a server that
// many 2026-07-28 clients share (serve's pooled child; see the package
// documentation). Server-bound, it
// sends each request under an id it mints,
// "mcp-stdio/serve/<random>/<n>", unique on the server whatever ids the
// clients chose and guessable by none of them (<random> is drawn once per
// server, see [IDMinter.Randomize]), with its progressToken, if any,
// swapped for a minted one too ("mcp-stdio/serve-progress/<random>/<n>"), and remembers the HTTP exchange the
// request came on ([ExchangeOf]). The stages behind it therefore see only
// minted request ids, unique on their server, and answer a request by
// sending its response client-bound: they never write to an exchange.
//
// Client-bound, it delivers to the request's exchange, with the client's
// id (and token) restored:
//   - a response, by its id, which ends the exchange;
//   - notifications/progress, by its progressToken;
//   - a notification whose params._meta carries the subscription id
//     "io.modelcontextprotocol/subscriptionId" of a request (a listen's
//     frames), the subscription id rewritten to the client's id, as it is
//     in a response's result._meta.
//
// A request from the server that no stage took gets -32601 back; other
// notifications are dropped.
//
// The request's HTTP answer waits for its first message, at most
// FirstAnswerWait: an error response first keeps its HTTP status (see
// [ModernErrorStatus]); a notification first starts the answer (an event
// stream for a client that accepts one). An error a stage behind returns
// for a request (such as [Refuse]) becomes the HTTP answer, a minted id in
// its body restored. When the exchange ends before the answer (the client
// went away), the router sends notifications/cancelled for the minted id
// server-bound. A client's own notifications/cancelled naming one of its
// requests is retargeted when exactly one request in flight has that id;
// other client notifications are dropped.
func ModernRouter(o ModernRouterOptions) Middleware {
	if o.FirstAnswerWait <= 0 {
		o.FirstAnswerWait = DefaultFirstAnswerWait
	}
	return func(next Duplex) Duplex {
		r := &modernRouter{
			o:      o,
			log:    loggerOrDiscard(o.Logger),
			next:   next,
			calls:  make(map[frame.ID]*routedCall),
			tokens: make(map[string]*routedCall),
		}
		if err := r.ids.Randomize(o.Rand); err != nil {
			r.log.Error("the ids minted for this server are a plain counter", "err", err)
		}
		if o.Conn != nil {
			o.Conn.OnClose(r.serverGone)
		}
		return Duplex{ToServer: HandlerFunc(r.toServer), ToClient: HandlerFunc(r.toClient)}
	}
}

// ModernErrorStatus returns the HTTP status a 2026-07-28 server answers
// an error code with (-32601: 404; -32700, -32600, -32602, -32020, -32021,
// -32022: 400), 0 for one answered with 200.
func ModernErrorStatus(code int) int {
	switch code {
	case frame.CodeMethodNotFound:
		return http.StatusNotFound
	case frame.CodeParseError, frame.CodeInvalidRequest, frame.CodeInvalidParams,
		frame.CodeHeaderMismatch, frame.CodeMissingCapability, frame.CodeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return 0
}

type modernRouter struct {
	o    ModernRouterOptions
	log  *slog.Logger
	next Duplex
	ids  IDMinter

	// timers are the FirstAnswerWait timers of requests that had their
	// answer, stopped, for the next requests: one less allocation a call.
	timers sync.Pool

	mu     sync.Mutex
	calls  map[frame.ID]*routedCall // by minted id
	tokens map[string]*routedCall   // by minted progress token (its JSON)
	gone   error                    // the server ended
}

// routedCall is one client request in flight.
type routedCall struct {
	minted, client frame.ID
	token          []byte // the client's progressToken (JSON), nil for none
	mintedToken    string
	x              Exchange

	mu    sync.Mutex
	state callState
	// wake ends Handle's wait for the first message, once: the response,
	// or the zero Message when a notification started the answer.
	wake chan frame.Message
}

type callState uint8

const (
	callWaiting   callState = iota // Handle waits for the first message
	callStreaming                  // the answer is under way
	callDone                       // answered or abandoned
)

func (r *modernRouter) toServer(ctx context.Context, m frame.Message) error {
	if m.Kind() != frame.Request {
		if m.Kind() == frame.Notification && m.Method() == cancelMethod {
			return r.clientCancel(ctx, m)
		}
		r.log.Debug("dropping a client message that is not a request", "method", m.Method())
		return nil
	}
	x := ExchangeOf(ctx)
	if x == nil {
		return errors.New("mw: a request reached the router without an HTTP exchange")
	}
	c := &routedCall{
		minted: r.ids.Mint(routerStage),
		client: m.ID(),
		x:      x,
		wake:   make(chan frame.Message, 1),
	}
	out, err := m.WithID(c.minted)
	if err != nil {
		return err
	}
	if tok := m.Get(requestProgressTokenPath); tok.Exists() {
		c.token = []byte(tok.Raw)
		c.mintedToken = string(r.ids.Mint(routerStage + "-progress"))
		if out, err = out.Set(requestProgressTokenPath, []byte(c.mintedToken)); err != nil {
			return err
		}
	}
	r.mu.Lock()
	if r.gone != nil {
		r.mu.Unlock()
		return Refuse(http.StatusServiceUnavailable, c.client, frame.CodeInternalError, "the server process has exited; send the request again")
	}
	r.calls[c.minted] = c
	if c.mintedToken != "" {
		r.tokens[c.mintedToken] = c
	}
	r.mu.Unlock()
	x.OnDone(func([]frame.Message) { r.abandon(c) })
	x.PreferJSON() // the answer waits for its first message anyway

	if err := r.next.ToServer.Handle(ctx, out); err != nil {
		r.forget(c)
		c.setDone()
		return restoreStatusID(err, c.minted, c.client)
	}
	timer := r.firstAnswerTimer()
	defer r.timers.Put(timer)
	defer timer.Stop() // before it goes back: no tick is left to read
	select {
	case first := <-c.wake:
		return r.answer(ctx, c, first)
	case <-ctx.Done():
		return nil // the client is gone: abandon cancels
	case <-timer.C:
	}
	c.mu.Lock()
	if c.state == callWaiting {
		c.state = callStreaming
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	select {
	case first := <-c.wake:
		return r.answer(ctx, c, first)
	default:
		return nil
	}
}

// firstAnswerTimer returns a timer that fires after FirstAnswerWait.
func (r *modernRouter) firstAnswerTimer() *time.Timer {
	if t, ok := r.timers.Get().(*time.Timer); ok {
		t.Reset(r.o.FirstAnswerWait)
		return t
	}
	return time.NewTimer(r.o.FirstAnswerWait)
}

// answer ends Handle's wait with what came first: nothing more when a
// notification started the answer (resp is the zero Message); else the
// response, whose error keeps its HTTP status, and anything else is the
// answer's only message.
func (r *modernRouter) answer(ctx context.Context, c *routedCall, resp frame.Message) error {
	if resp.Len() == 0 {
		return nil
	}
	if code, ok := resp.ErrorCode(); ok {
		if status := ModernErrorStatus(code); status != 0 {
			h := make(http.Header, 1)
			h.Set("Content-Type", "application/json")
			return &frame.StatusError{Code: status, Header: h, Body: resp.Bytes()}
		}
	}
	if err := c.x.SendLast(ctx, resp, ""); err != nil {
		r.log.Debug("could not answer a request", "err", err)
	}
	return nil
}

func (c *routedCall) setDone() {
	c.mu.Lock()
	c.state = callDone
	c.mu.Unlock()
}

// forget drops c from the maps; it reports whether c was still there.
func (r *modernRouter) forget(c *routedCall) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls[c.minted] != c {
		return false
	}
	delete(r.calls, c.minted)
	if c.mintedToken != "" {
		delete(r.tokens, c.mintedToken)
	}
	return true
}

// abandon runs when c's exchange is over: unless c was answered, the
// client went away, and the server is told to stop.
func (r *modernRouter) abandon(c *routedCall) {
	if !r.forget(c) {
		return
	}
	c.setDone()
	cancel := cancelNotification(c.minted, routerCancelReasonClientGone)
	ctx := context.Background()
	if r.o.Conn != nil {
		ctx = WithConn(ctx, r.o.Conn)
	}
	if err := r.next.ToServer.Handle(ctx, cancel); err != nil {
		r.log.Debug("could not cancel an abandoned request", "err", err)
	}
}

// clientCancel retargets a client's notifications/cancelled onto the
// minted id of the one request in flight with the id it names.
func (r *modernRouter) clientCancel(ctx context.Context, m frame.Message) error {
	id, ok := cancelledRequestID(m)
	if !ok {
		return nil
	}
	var found *routedCall
	r.mu.Lock()
	for _, c := range r.calls {
		if c.client == id {
			if found != nil {
				r.mu.Unlock()
				r.log.Debug("a client's cancel names an id several clients use; dropped", "id", string(id))
				return nil
			}
			found = c
		}
	}
	r.mu.Unlock()
	if found == nil {
		return nil
	}
	out, ok := retargetCancel(m, found.minted)
	if !ok {
		return nil
	}
	return r.next.ToServer.Handle(ctx, out)
}

func (r *modernRouter) toClient(ctx context.Context, m frame.Message) error {
	switch k := m.Kind(); {
	case k.IsResponse():
		return r.deliverResponse(ctx, m)
	case k == frame.Notification:
		return r.deliverNotification(ctx, m)
	case k == frame.Request:
		r.log.Debug("the server sent a request no client can answer", "method", m.Method())
		return r.next.ToServer.Handle(ctx, frame.ErrorResponse(m.ID(), frame.CodeMethodNotFound,
			"the gateway has no client to send "+m.Method()+" to"))
	}
	return nil
}

func (r *modernRouter) deliverResponse(ctx context.Context, m frame.Message) error {
	r.mu.Lock()
	c := r.calls[m.ID()]
	r.mu.Unlock()
	if c == nil || !r.forget(c) {
		r.log.Debug("dropping a response no request waits for", "id", string(m.ID()))
		return nil
	}
	out, err := m.WithID(c.client)
	if err != nil {
		return err
	}
	if mintedSubscription(out, c.minted) {
		if out, err = out.Set(mcp.ResultSubscriptionID, []byte(c.client)); err != nil {
			return err
		}
	}
	c.deliver(ctx, out, true, r.log)
	return nil
}

// mintedSubscription reports whether response m's result._meta carries
// minted as its subscription id. The id is compared token for token, so
// it can only be there in bytes that hold the token: most responses hold
// none, and are not walked for it.
func mintedSubscription(m frame.Message, minted frame.ID) bool {
	if !m.Contains(string(minted)) {
		return false
	}
	sid := uniqueMember(m.Get("result._meta"), mcp.MetaSubscriptionID)
	return sid.Exists() && frame.ID(sid.Raw) == minted
}

func (r *modernRouter) deliverNotification(ctx context.Context, m frame.Message) error {
	var c *routedCall
	path := ""
	var restored []byte
	if m.Method() == "notifications/progress" {
		tok := m.Get(paramsProgressTokenPath)
		r.mu.Lock()
		c = r.tokens[tok.Raw]
		r.mu.Unlock()
		if c != nil {
			path, restored = paramsProgressTokenPath, c.token
		}
	} else if sid := m.Get(mcp.ParamsSubscriptionID); sid.Exists() {
		r.mu.Lock()
		c = r.calls[frame.ID(sid.Raw)]
		r.mu.Unlock()
		if c != nil {
			path, restored = mcp.ParamsSubscriptionID, []byte(c.client)
		}
	}
	if c == nil {
		r.log.Debug("dropping a notification no request is waiting for", "method", m.Method())
		return nil
	}
	out, err := m.Set(path, restored)
	if err != nil {
		return err
	}
	c.deliver(ctx, out, false, r.log)
	return nil
}

// deliver puts m on c's answer: the response ends it. While the request's
// Handle waits, a response goes to it, and a notification starts the
// answer.
func (c *routedCall) deliver(ctx context.Context, m frame.Message, final bool, log *slog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	switch c.state {
	case callDone:
		return
	case callWaiting:
		if final {
			c.state = callDone
			c.wake <- m
			return
		}
		c.state = callStreaming
		c.wake <- frame.Message{}
		err = c.x.Send(ctx, m, "")
	case callStreaming:
		if final {
			c.state = callDone
			err = c.x.SendLast(ctx, m, "")
		} else {
			err = c.x.Send(ctx, m, "")
		}
	}
	if err != nil {
		log.Debug("could not deliver a message to its client", "method", m.Method(), "err", err)
	}
}

// serverGone answers every request in flight once the server has ended.
func (r *modernRouter) serverGone(cause error) {
	r.mu.Lock()
	r.gone = cause
	calls := make([]*routedCall, 0, len(r.calls))
	for _, c := range r.calls {
		calls = append(calls, c)
	}
	clear(r.calls)
	clear(r.tokens)
	r.mu.Unlock()
	for _, c := range calls {
		resp := frame.ErrorResponse(c.client, frame.CodeInternalError, "the server process exited before it answered")
		c.deliver(context.Background(), resp, true, r.log)
	}
}

// restoreStatusID returns err with a JSON-RPC error body under minted put
// back under client's id.
func restoreStatusID(err error, minted, client frame.ID) error {
	var st *frame.StatusError
	if !errors.As(err, &st) {
		return err
	}
	if !frame.Valid(st.Body) || frame.ID(gjson.GetBytes(st.Body, "id").Raw) != minted {
		return err
	}
	m, perr := frame.Parse(st.Body)
	if perr != nil {
		return err
	}
	restored, werr := m.WithID(client)
	if werr != nil {
		return err
	}
	return &frame.StatusError{Code: st.Code, Header: st.Header, Body: restored.Bytes()}
}
