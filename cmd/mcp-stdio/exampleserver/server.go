package exampleserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-stdio/mcp-stdio/frame"
)

// Options configures [Serve]. The zero value is usable.
type Options struct {
	// Name and Version are the server's identity (serverInfo). Name
	// defaults to "mcp-stdio-example", Version to "0.0.0".
	Name, Version string
	// PageSize is the page size of tools/list, resources/list,
	// resources/templates/list and prompts/list; 0 means no pagination.
	PageSize int
	// MaxMessageSize bounds one incoming line; 0 means
	// [frame.DefaultMaxMessageSize]. A longer line is answered with -32600.
	MaxMessageSize int
	// Logger receives diagnostics (the command points it at stderr); nil
	// discards them. Nothing but protocol messages is ever written to the
	// output.
	Logger *slog.Logger
	// SessionEraOnly turns the server's 2026-07-28 face off, so that it
	// answers as a server written before 2026-07-28 does: server/discover
	// and subscriptions/listen are -32601 whatever their params, the
	// "io.modelcontextprotocol/*" keys of a request's _meta mean nothing,
	// and every request but initialize and ping is refused with -32600
	// until initialize has been answered (see the package documentation,
	// "A session-era-only server"). It stands in for the session-era
	// children a gateway meets.
	SessionEraOnly bool
	// ParamHeader annotates the echo tool's text argument with
	// x-mcp-header "Text" in tools/list (SEP-2243), so that a client of
	// 2026-07-28 over HTTP mirrors it in an Mcp-Param-Text header and a
	// gateway in front checks it. Off, no tool has an annotation.
	ParamHeader bool
	// RefuseReservedMeta, with SessionEraOnly, refuses a request whose
	// params._meta carries an "io.modelcontextprotocol/" key with -32600
	// after initialize, as a dual-era Python SDK server does on a
	// session-era connection: the strict session-era server a gateway
	// must strip those keys for. Off, they mean nothing.
	RefuseReservedMeta bool
	// AskRoots makes the server ask a session-era client that declared
	// roots for them (roots/list) once notifications/initialized has
	// come, and keep the answer for the connection, as many servers do
	// (@modelcontextprotocol/server-everything, server-filesystem); and
	// offers the roots tool, which returns what it got, or asks again.
	// Off, the server never asks for roots and has no roots tool.
	AskRoots bool

	// Knobs for this package's own tests.
	grace    time.Duration // shutdown grace; 0 means shutdownGrace, <0 none
	maxBytes int           // cap of the bytes tool; 0 means maxToolBytes
}

// Limits and timings.
const (
	defaultName = "mcp-stdio-example"
	// maxHandlers bounds the requests being worked on at once.
	maxHandlers = 64
	// maxParked bounds the handlers waiting on the client (asks waiting for
	// their elicitation answer, open listens).
	maxParked = 64
	// shutdownGrace is how long handlers still running when stdin ends may
	// take to finish before they are cancelled.
	shutdownGrace = 2 * time.Second
)

// Reasons a request context is cancelled.
var (
	errCancelledByClient = errors.New("cancelled by the client")
	errStdinClosed       = errors.New("stdin closed")
)

// Serve runs the example server: it reads requests from in and writes
// protocol messages, and only protocol messages, to out. It returns nil when
// in reaches EOF, after the handlers still running have finished or been
// cancelled (within a short grace period). It returns ctx.Err() when ctx is
// cancelled, the error when out fails, and a read error other than EOF
// after shutting down as for EOF.
//
// In every case Serve returns only after all of its handlers have ended.
// The goroutine reading in ends when a read returns; if Serve returns for
// another reason than the end of in, close in to reclaim it.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	s := newServer(o, out)
	return s.run(ctx, in)
}

// serverIdentity is the server's name and version as a result's _meta
// carries them.
type serverIdentity struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// server is one connection's state. What handlers share is guarded by mu;
// the connection's era, the agreed version and the client's capabilities
// are written only by the read loop (classify), so every request sees those
// of the messages before it. The subscription registry has its own lock,
// notifyMu, held while an ack, an event or a final result is written, so
// that these reach stdout in a consistent order. Lock order: notifyMu, then
// mu.
type server struct {
	opts Options
	log  *slog.Logger
	out  *frame.Writer
	info object // serverInfo
	// identity is info as a struct, for the _meta of every 2026-07-28
	// result: the same bytes, encoded without a map's sort.
	identity serverIdentity
	// resultMeta is the _meta of a 2026-07-28 result whose handler set
	// none, {"io.modelcontextprotocol/serverInfo": identity}, encoded.
	resultMeta json.RawMessage
	key        [32]byte // signs requestState tokens; random per Serve
	now        func() time.Time

	slots  chan struct{}  // handler slots (maxHandlers)
	parked chan struct{}  // parked handlers (maxParked)
	wg     sync.WaitGroup // requests being handled, and what they start
	// work hands a request to a handler goroutine waiting for one (see
	// startHandler); idleHandlers counts those waiting, handlers every
	// handler goroutine, busy or waiting.
	work         chan handlerJob
	idleHandlers atomic.Int32
	handlers     sync.WaitGroup
	stop         context.CancelCauseFunc // cancels the root context

	writeOnce sync.Once

	mu              sync.Mutex
	era             era
	protocolVersion string                          // session era: the version initialize agreed
	clientCaps      string                          // session era: initialize's params.capabilities
	logLevel        string                          // session era: logging/setLevel
	inflight        map[frame.ID]*call              // requests being handled
	pending         map[frame.ID]chan frame.Message // our requests to the client
	batches         map[frame.ID]*batchReply        // batch requests awaiting their response
	nextID          int64
	closing         bool // stdin ended: no new requests to the client
	toolCalls       int64
	bonus           bool
	// roots is what AskRoots' roots/list at the start got: the result's
	// roots (raw JSON), or "error: " and the error's message; "" before
	// it was answered. rootsAsked is closed once it was (or cannot be);
	// nil when none was asked.
	roots      string
	rootsAsked chan struct{}

	notifyMu   sync.Mutex
	subscribed map[string]bool        // session-era resources/subscribe
	listeners  map[frame.ID]*listener // open subscriptions/listen
}

// call is an in-flight request.
type call struct {
	method string
	cancel context.CancelCauseFunc
}

func newServer(o Options, out io.Writer) *server {
	if o.Name == "" {
		o.Name = defaultName
	}
	if o.Version == "" {
		o.Version = "0.0.0"
	}
	if o.grace == 0 {
		o.grace = shutdownGrace
	}
	if o.maxBytes <= 0 {
		o.maxBytes = maxToolBytes
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{
		opts:       o,
		log:        log,
		out:        frame.NewWriter(out),
		info:       object{"name": o.Name, "version": o.Version},
		identity:   serverIdentity{Name: o.Name, Version: o.Version},
		now:        time.Now,
		slots:      make(chan struct{}, maxHandlers),
		work:       make(chan handlerJob),
		parked:     make(chan struct{}, maxParked),
		inflight:   make(map[frame.ID]*call),
		pending:    make(map[frame.ID]chan frame.Message),
		batches:    make(map[frame.ID]*batchReply),
		subscribed: make(map[string]bool),
		listeners:  make(map[frame.ID]*listener),
	}
	s.resultMeta = marshal(object{metaServerInfo: s.identity})
	_, _ = rand.Read(s.key[:]) // never fails (crypto/rand, Go 1.24+)
	return s
}

// inbound is one item from the stdin reader: a message, a bad line, or the
// end of the input.
type inbound struct {
	msg     frame.Message
	lineErr *frame.LineError
	end     error // io.EOF or the read error; the reader has stopped
}

// run is the read loop.
func (s *server) run(ctx context.Context, in io.Reader) error {
	root, stop := context.WithCancelCause(ctx)
	s.stop = stop
	defer s.handlers.Wait() // the idle ones end with root
	defer stop(nil)

	items := make(chan inbound)
	done := make(chan struct{})
	defer close(done)
	go readLoop(frame.NewReader(in, s.opts.MaxMessageSize), items, done)

	for {
		select {
		case it := <-items:
			switch {
			case it.end != nil:
				return s.shutdown(root, it.end)
			case it.lineErr != nil:
				s.badLine(it.lineErr)
			default:
				s.receive(root, it.msg)
			}
		case <-root.Done():
			s.cancelAll(func(*call) bool { return true }, context.Cause(root))
			s.wg.Wait()
			if err := context.Cause(root); err != nil && ctx.Err() == nil {
				return err // stdout failed
			}
			return ctx.Err()
		}
	}
}

// readLoop reads stdin until it ends, handing each item to the read loop.
func readLoop(r *frame.Reader, items chan<- inbound, done <-chan struct{}) {
	for {
		m, err := r.Read()
		var it inbound
		var le *frame.LineError
		switch {
		case err == nil:
			it.msg = m
		case errors.As(err, &le):
			it.lineErr = le
		default:
			it.end = err
		}
		select {
		case items <- it:
		case <-done:
			return
		}
		if it.end != nil {
			return
		}
	}
}

// badLine answers a line that could not be parsed.
func (s *server) badLine(le *frame.LineError) {
	s.log.Warn("bad input line", "line", le.Line, "err", le.Err)
	msg := "parse error: the line is not valid JSON"
	if le.Code() == frame.CodeInvalidRequest {
		msg = fmt.Sprintf("invalid request: the message exceeds %d bytes", s.maxMessageSize())
	}
	s.send(frame.ErrorResponse(le.ID, le.Code(), msg))
}

func (s *server) maxMessageSize() int {
	if s.opts.MaxMessageSize > 0 {
		return s.opts.MaxMessageSize
	}
	return frame.DefaultMaxMessageSize
}

// receive acts on one message from the client. It runs on the read loop and
// never waits for a handler, only for a free handler slot.
func (s *server) receive(ctx context.Context, m frame.Message) {
	switch m.Kind() {
	case frame.Request:
		s.receiveRequest(ctx, m)
	case frame.Notification:
		if m.Get("id").Exists() { // an id that is neither string nor number
			s.send(frame.ErrorResponse("", frame.CodeInvalidRequest, "invalid request: id must be a string or a number"))
			return
		}
		s.receiveNotification(ctx, m)
	case frame.Result, frame.Error:
		s.receiveResponse(m)
	case frame.Batch:
		s.receiveBatch(ctx, m)
	default:
		reason, id := "not a JSON-RPC 2.0 message", frame.ID("")
		var env *frame.EnvelopeError
		if errors.As(m.Err(), &env) {
			reason = env.Reason
			if env.Shape == frame.Request {
				id = env.ID // the id is fine: answer the request under it
			}
		}
		s.log.Warn("not a JSON-RPC message", "reason", reason)
		s.send(frame.ErrorResponse(id, frame.CodeInvalidRequest, "invalid request: "+reason))
	}
}

// receiveRequest classifies a request, registers it and starts its handler.
func (s *server) receiveRequest(ctx context.Context, m frame.Message) {
	id := m.ID()
	if id.IsNull() {
		s.send(frame.ErrorResponse("", frame.CodeInvalidRequest, "invalid request: a request id must not be null"))
		return
	}
	if m.Method() == "ping" { // every era, no state: answer at once
		s.send(frame.ResultResponse(id, []byte("{}")))
		return
	}
	s.mu.Lock()
	_, dup := s.inflight[id]
	s.mu.Unlock()
	if dup {
		s.send(frame.ErrorResponse(id, frame.CodeInvalidRequest, "invalid request: this id is already in use by a request in progress"))
		return
	}
	req, rerr := s.classify(m)
	if rerr != nil {
		s.log.Debug("request refused", "id", id, "method", m.Method(), "code", rerr.code)
		s.send(rerr.response(id))
		return
	}
	if s.log.Enabled(ctx, slog.LevelDebug) { // its arguments cost every request otherwise
		s.log.Debug("request", "id", id, "method", req.method, "stateless", req.stateless)
	}
	// Only the read loop adds to inflight, so the id is still free.
	rctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	s.inflight[id] = &call{method: req.method, cancel: cancel}
	s.mu.Unlock()

	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		s.finish(id)
		cancel(nil)
		return
	}
	var once sync.Once
	req.release = func() { once.Do(func() { <-s.slots }) }
	s.wg.Add(1)
	s.startHandler(ctx, handlerJob{ctx: rctx, cancel: cancel, req: req})
}

// maxIdleHandlers is how many handler goroutines wait for the next request
// once theirs is answered. A steady stream of requests then reuses
// goroutines whose stacks have grown to what a handler needs, instead of
// starting a goroutine per request and growing its stack by copies.
const maxIdleHandlers = 4

// handlerJob is a request for a handler goroutine: handle's arguments.
type handlerJob struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	req    *request
}

// startHandler runs j on a handler goroutine that is waiting for one, or
// on a new one. ctx is the connection's: waiting handlers end with it.
func (s *server) startHandler(ctx context.Context, j handlerJob) {
	select {
	case s.work <- j:
		return
	default:
	}
	s.handlers.Add(1)
	go s.handlerLoop(ctx, j)
}

// handlerLoop handles j, then, while fewer than maxIdleHandlers others
// wait, waits for the next job until ctx ends.
func (s *server) handlerLoop(ctx context.Context, j handlerJob) {
	defer s.handlers.Done()
	for {
		s.handle(j.ctx, j.cancel, j.req)
		if s.idleHandlers.Add(1) > maxIdleHandlers {
			s.idleHandlers.Add(-1)
			return
		}
		select {
		case j = <-s.work:
			s.idleHandlers.Add(-1)
		case <-ctx.Done():
			s.idleHandlers.Add(-1)
			return
		}
	}
}

// handle runs one request's handler and answers it.
func (s *server) handle(ctx context.Context, cancel context.CancelCauseFunc, req *request) {
	defer s.wg.Done()
	defer req.release()
	defer cancel(nil)
	res, err := s.dispatch(ctx, req)
	s.finish(req.id)
	cause := context.Cause(ctx)
	if errors.Is(cause, errCancelledByClient) && req.method != "subscriptions/listen" {
		s.log.Debug("request cancelled", "id", req.id, "method", req.method)
		s.skipInBatch(req.id)
		return // a cancelled request gets no response
	}
	if err != nil {
		var rerr *rpcError
		switch {
		case errors.As(err, &rerr):
		case ctx.Err() != nil:
			rerr = &rpcError{code: frame.CodeInternalError, message: "request abandoned: " + cause.Error()}
		default:
			s.log.Error("handler failed", "method", req.method, "err", err)
			rerr = &rpcError{code: frame.CodeInternalError, message: "internal error: " + err.Error()}
		}
		s.send(rerr.response(req.id))
		return
	}
	if req.stamped {
		s.send(frame.ResultResponse(req.id, marshalStamped(res, s.resultMeta)))
		return
	}
	s.send(frame.ResultResponse(req.id, marshal(res)))
}

// dispatch calls the method's handler, turning a panic into an error.
func (s *server) dispatch(ctx context.Context, req *request) (res object, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("handler panicked", "method", req.method, "panic", p, "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return s.call(ctx, req)
}

// finish forgets an in-flight request.
func (s *server) finish(id frame.ID) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
}

// cancelAll cancels the in-flight requests match selects.
func (s *server) cancelAll(match func(*call) bool, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.inflight {
		if match(c) {
			c.cancel(cause)
		}
	}
}

// receiveNotification acts on a notification from the client.
func (s *server) receiveNotification(ctx context.Context, m frame.Message) {
	switch m.Method() {
	case "notifications/cancelled":
		rid := m.Get("params.requestId")
		if !rid.Exists() {
			return
		}
		id := frame.ID(rid.Raw) // correlate on the raw token
		s.mu.Lock()
		c := s.inflight[id]
		s.mu.Unlock()
		if c == nil {
			s.log.Debug("cancel for an unknown or finished request", "requestId", rid.Raw)
			return
		}
		s.log.Debug("cancelling", "id", id, "method", c.method, "reason", m.Get("params.reason").String())
		c.cancel(errCancelledByClient)
	case "notifications/initialized":
		s.mu.Lock()
		ask := s.opts.AskRoots && gjson.Get(s.clientCaps, "roots").IsObject() && s.rootsAsked == nil
		if ask {
			s.rootsAsked = make(chan struct{})
		}
		s.mu.Unlock()
		if ask {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.askRootsAtStart(ctx)
			}()
		}
	case "notifications/roots/list_changed":
	default:
		s.log.Debug("ignored notification", "method", m.Method())
	}
}

// receiveResponse routes a response from the client to the request of ours
// that waits for it.
func (s *server) receiveResponse(m frame.Message) {
	s.mu.Lock()
	ch, ok := s.pending[m.ID()]
	delete(s.pending, m.ID())
	s.mu.Unlock()
	if !ok {
		s.log.Warn("response to no request of ours", "id", m.ID())
		return
	}
	ch <- m // buffered, one slot
}

// shutdown ends the connection once stdin has ended.
func (s *server) shutdown(ctx context.Context, end error) error {
	s.log.Debug("stdin ended", "err", end)
	// Requests waiting on the client can never be answered now.
	s.mu.Lock()
	s.closing = true
	for id, ch := range s.pending {
		close(ch)
		delete(s.pending, id)
	}
	s.mu.Unlock()
	// Listens end gracefully at once.
	s.cancelAll(func(c *call) bool { return c.method == "subscriptions/listen" }, errStdinClosed)

	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	if s.opts.grace > 0 {
		t := time.NewTimer(s.opts.grace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	s.cancelAll(func(*call) bool { return true }, errStdinClosed)
	<-finished
	if errors.Is(end, io.EOF) {
		return nil
	}
	return fmt.Errorf("reading stdin: %w", end)
}

// send writes one message to stdout, unless it answers a request of a
// batch, which goes out with the rest of the batch (batch.go).
func (s *server) send(m frame.Message) {
	if m.Kind().IsResponse() && s.collect(m) {
		return // goes out with the rest of its batch
	}
	s.write(m)
}

// write writes m to stdout. A write failure is fatal to the connection: it
// is logged once and stops the server.
func (s *server) write(m frame.Message) {
	if err := s.out.Write(m); err != nil {
		s.writeOnce.Do(func() {
			s.log.Error("writing stdout failed", "err", err)
			if s.stop != nil {
				s.stop(fmt.Errorf("writing stdout: %w", err))
			}
		})
	}
}
