package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// Transport names accepted by [RelayConfig.Transport].
const (
	TransportAuto       = "auto"            // Streamable HTTP, falling back to HTTP+SSE
	TransportStreamable = "streamable-http" // Streamable HTTP only
	TransportSSE        = "sse"             // HTTP+SSE (MCP 2024-11-05) only
)

// Relay defaults.
const (
	DefaultMaxInFlight  = 256
	DefaultDrainTimeout = 5 * time.Second
	DefaultSSEIdle      = 300 * time.Second
)

// RelayConfig configures a relay: one stdio client (the reader and writer
// given to [Relay]) carried to one remote MCP server.
type RelayConfig struct {
	// URL is the remote MCP endpoint (the SSE GET URL for TransportSSE).
	URL string
	// Transport is TransportAuto (the default when empty),
	// TransportStreamable or TransportSSE.
	Transport string
	// Header holds static headers sent with every HTTP request: -H entries,
	// a bearer token. They override the defaults (Content-Type, Accept).
	Header http.Header
	// HTTP configures the HTTP client (timeouts, TCP keepalive, proxies).
	// Ignored when HTTPClient is set.
	HTTP transport.HTTPOptions
	// HTTPClient, when set, sends every request instead of one built from
	// HTTP. Wrap its Transport to add authentication or tracing.
	HTTPClient *http.Client
	// SSEReadTimeout is the longest silence tolerated on a standing SSE
	// stream before it is reconnected; 0 means DefaultSSEIdle, negative
	// means no limit.
	SSEReadTimeout time.Duration
	// MaxMessageSize caps one message in either direction; 0 means
	// frame.DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxInFlight bounds the client requests in flight at once; stdin is not
	// read further while the bound is reached. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// DrainTimeout bounds how long in-flight requests may finish after stdin
	// ends or ctx is cancelled; 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// NoCancelFilter removes the cancel filter: late responses to cancelled
	// requests then reach the client, and a cancel no longer aborts the
	// in-flight HTTP request.
	NoCancelFilter bool
	// Middlewares are extra stages, placed just inside the cancel filter:
	// they see every message the client sends and every message it gets
	// except responses to requests it cancelled. Use them to deny a tool,
	// redact a field, or log.
	Middlewares []mw.Middleware
	// Retry tunes the retry stage (attempts, backoff, the sleep used between
	// attempts).
	Retry mw.RetryOptions
	// Auth, when set, is the re-authorisation stage's view of an OAuth
	// client; the HTTP client must then add its token to every request.
	Auth mw.Authorizer
	// Logger receives diagnostics; nil discards them. Never stdout.
	Logger *slog.Logger
}

func (c *RelayConfig) defaults() {
	if c.Transport == "" {
		c.Transport = TransportAuto
	}
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = frame.DefaultMaxMessageSize
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.SSEReadTimeout == 0 {
		c.SSEReadTimeout = DefaultSSEIdle
	}
	if c.SSEReadTimeout < 0 {
		c.SSEReadTimeout = 0
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Relay carries the newline-delimited JSON-RPC client on in and out to the
// remote server cfg names, until in ends or ctx is cancelled. Then it lets
// in-flight requests finish (bounded by cfg.DrainTimeout), answers those
// that could not with an error, ends the server session, and returns nil.
// It returns an error only when the relay could not run at all (bad config,
// the HTTP+SSE server never offered an endpoint).
//
// Only protocol bytes are written to out, one message per line. Every
// request read from in gets exactly one answer on out — the server's, or
// the relay's own error — unless the client cancelled it.
//
// When ctx ends first, a read of in that is under way is interrupted if in
// has a SetReadDeadline method that works (a net.Conn, an *os.File the
// runtime polls, such as one end of os.Pipe); Relay then returns with no
// goroutine of its own left. Any other in (an io.Pipe, a terminal) stays
// blocked in Read until the caller closes it.
func Relay(ctx context.Context, cfg RelayConfig, in io.Reader, out io.Writer) error {
	r, err := newRelay(cfg, out)
	if err != nil {
		return err
	}
	return r.run(ctx, in)
}

// relay is one running relay pipeline.
type relay struct {
	cfg     RelayConfig
	log     *slog.Logger
	out     *frame.Writer
	chain   mw.Duplex
	session *mw.Session
	// runner is the transport's background work (the HTTP+SSE stream), or
	// nil.
	runner func(context.Context) error
	// built is the HTTP client the relay made for itself, or nil.
	built *http.Client
}

func newRelay(cfg RelayConfig, out io.Writer) (*relay, error) {
	cfg.defaults()
	if cfg.URL == "" {
		return nil, errors.New("relay: no server URL")
	}
	r := &relay{cfg: cfg, log: cfg.Logger, out: frame.NewWriter(out)}

	// The transport is built before the chain, so its client-bound exit is
	// bound once the chain exists.
	var toClient mw.Late
	w, err := buildTransport(cfg, &toClient)
	if err != nil {
		return nil, err
	}
	r.runner = w.runner
	r.built = w.built

	r.session = mw.NewSession(mw.SessionOptions{Transport: w.streams, Logger: cfg.Logger})
	retry := cfg.Retry
	if retry.Logger == nil {
		retry.Logger = cfg.Logger
	}
	var cancel mw.Middleware
	if !cfg.NoCancelFilter {
		cancel = mw.CancelFilter(mw.CancelOptions{Logger: cfg.Logger})
	}
	var reauth mw.Middleware
	if cfg.Auth != nil {
		reauth = mw.Reauth(mw.ReauthOptions{Authorizer: cfg.Auth, Logger: cfg.Logger})
	}
	stages := []mw.Middleware{cancel}
	stages = append(stages, cfg.Middlewares...)
	stages = append(stages,
		mw.PaginationMerge(mw.PaginationOptions{Logger: cfg.Logger}),
		r.session.Middleware(),
		mw.Retry(retry),
		reauth,
	)
	r.chain = mw.Chain(stages...)(mw.Duplex{ToServer: w.wire, ToClient: mw.HandlerFunc(r.toStdout)})
	toClient.Bind(r.chain.ToClient)
	return r, nil
}

// wiring is the transport side of a relay.
type wiring struct {
	wire    mw.Handler         // sends messages
	streams mw.StreamTransport // GET stream and DELETE; nil on HTTP+SSE
	runner  func(context.Context) error
	// built is the HTTP client made here (nil when the config supplied
	// one); its idle connections are closed when the relay ends.
	built *http.Client
}

// buildTransport builds the transport cfg names, delivering what the server
// sends to sink.
func buildTransport(cfg RelayConfig, sink transport.Sink) (wiring, error) {
	client, built := cfg.HTTPClient, (*http.Client)(nil)
	if client == nil {
		client = transport.NewHTTPClient(cfg.HTTP)
		built = client
	}
	readTimeout := cfg.HTTP.ReadTimeout
	if readTimeout <= 0 {
		readTimeout = transport.DefaultReadTimeout
	}
	connectTimeout := cfg.HTTP.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = transport.DefaultConnectTimeout
	}
	streamable := &transport.StreamableClient{
		URL:               cfg.URL,
		Client:            client,
		Header:            cfg.Header,
		ToClient:          sink,
		MaxMessageSize:    cfg.MaxMessageSize,
		IdleTimeout:       readTimeout,
		StreamIdleTimeout: cfg.SSEReadTimeout,
		Logger:            cfg.Logger,
	}
	sse := &transport.SSEClient{
		URL:                  cfg.URL,
		Client:               client,
		Header:               cfg.Header,
		ToClient:             sink,
		MaxMessageSize:       cfg.MaxMessageSize,
		FirstEndpointTimeout: connectTimeout,
		EndpointWait:         readTimeout,
		IdleTimeout:          cfg.SSEReadTimeout,
		Logger:               cfg.Logger,
	}
	switch cfg.Transport {
	case TransportAuto:
		auto := &transport.Auto{Streamable: streamable, SSE: sse, Logger: cfg.Logger}
		return wiring{wire: auto, streams: auto, runner: auto.Run, built: built}, nil
	case TransportStreamable:
		return wiring{wire: streamable, streams: streamable, built: built}, nil
	case TransportSSE:
		return wiring{wire: sse, runner: sse.Run, built: built}, nil
	}
	return wiring{}, fmt.Errorf("relay: unknown transport %q (want %s, %s or %s)", cfg.Transport, TransportAuto, TransportStreamable, TransportSSE)
}

// toStdout is the end of the client-bound path: one line on stdout per
// message. Answers to ids a stage minted never get here unless the stage
// that minted them had already given up on them; they are dropped.
func (r *relay) toStdout(_ context.Context, m frame.Message) error {
	if m.Kind().IsResponse() && mw.IsMinted(m.ID()) {
		r.log.Debug("dropping a late answer to a relay-owned request", "id", m.ID().String())
		return nil
	}
	return r.out.Write(m)
}

// answer writes the relay's own answer for a client request straight to
// stdout, past every stage: a client must never wait forever.
func (r *relay) answer(m frame.Message) {
	if err := r.out.Write(m); err != nil {
		r.log.Warn("cannot write to stdout", "err", err)
	}
}

// run pumps stdin into the chain until stdin ends or ctx is done, then
// drains and shuts down.
func (r *relay) run(ctx context.Context, in io.Reader) error {
	// work lives until the drain is over; requests run under it, not under
	// ctx, so a signal lets them finish within the drain bound.
	work, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopWork(frame.ErrClosed)

	var bg sync.WaitGroup
	runnerErr := make(chan error, 1)
	if r.runner != nil {
		bg.Go(func() {
			if err := r.runner(work); err != nil {
				runnerErr <- err
			}
		})
	}

	// Notifications and the client's answers keep their order on one
	// goroutine. Requests each get their own, bounded by MaxInFlight, and
	// each waits until the notifications read before it have been
	// delivered: a client that sends notifications/initialized and then
	// tools/list must not have the server see them the other way round.
	d := &dispatcher{
		r:          r,
		work:       work,
		ordered:    make(chan queued, 256),
		slots:      make(chan struct{}, r.cfg.MaxInFlight),
		lastQueued: closedChan(),
	}
	bg.Go(d.deliverOrdered)

	// stdin is read, and each message dispatched, on its own goroutine, so
	// a cancel is read while requests are in flight.
	readerCtx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	readerDone := make(chan struct{})
	go newStdinReader(r, readerCtx, in, d.dispatch, readerDone).run()

	var fatal error
	select {
	case <-readerDone:
	case fatal = <-runnerErr:
	case <-ctx.Done():
		r.log.Info("shutting down", "cause", context.Cause(ctx))
	}
	stopReader()
	if interruptRead(in) {
		<-readerDone
	}
	d.close()
	requests := &d.requests

	// Drain: let requests in flight finish, within the bound.
	drained := make(chan struct{})
	go func() { requests.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(r.cfg.DrainTimeout):
		r.log.Warn("requests still in flight after the drain timeout; abandoning them", "timeout", r.cfg.DrainTimeout)
		stopWork(frame.ErrClosed)
		<-drained
	}
	close(d.ordered)

	endCtx, cancelEnd := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.DrainTimeout)
	if err := r.session.Close(endCtx); err != nil {
		r.log.Warn("could not end the server session", "err", err)
	}
	cancelEnd()
	stopWork(frame.ErrClosed)
	bg.Wait()
	if r.built != nil {
		// Nothing is in flight any more: let the kept-alive connections
		// (and their goroutines) go now, not when the process exits.
		r.built.CloseIdleConnections()
	}
	if fatal == nil {
		select {
		case fatal = <-runnerErr:
		default:
		}
	}
	return fatal
}

// interruptRead makes a read of in that is under way, or comes later, fail
// at once, when in supports read deadlines; it reports whether it could.
func interruptRead(in io.Reader) bool {
	d, ok := in.(interface{ SetReadDeadline(time.Time) error })
	return ok && d.SetReadDeadline(time.Now()) == nil
}

// dispatcher hands the client's messages to the chain: requests each on
// their own goroutine, everything else in order on one.
type dispatcher struct {
	r        *relay
	work     context.Context
	ordered  chan queued
	slots    chan struct{} // one per request in flight
	requests sync.WaitGroup

	mu         sync.Mutex
	closed     bool          // no more dispatching: the relay is draining
	lastQueued chan struct{} // done of the last message queued in order
}

// dispatch starts delivering m. A request (or batch) takes one of the
// MaxInFlight slots and comes back as send, which the caller must run, on a
// goroutine of its own (the request is then counted in d.requests until send
// returns); anything else is queued in order and send is nil. dispatch blocks
// while every slot is taken or the ordered queue is full, and gives up (ok
// false) when ctx ends or the relay stopped dispatching.
func (d *dispatcher) dispatch(ctx context.Context, m frame.Message) (send func(), ok bool) {
	if m.Kind() == frame.Request || m.Kind() == frame.Batch {
		select {
		case d.slots <- struct{}{}:
		case <-ctx.Done():
			d.r.answer(frame.ErrorResponse(m.ID(), frame.CodeGateway, "relay shutting down"))
			return nil, false
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			<-d.slots
			d.r.answer(frame.ErrorResponse(m.ID(), frame.CodeGateway, "relay shutting down"))
			return nil, false
		}
		after := d.lastQueued
		d.requests.Add(1)
		d.mu.Unlock()
		return func() {
			defer d.requests.Done()
			defer func() { <-d.slots }()
			select {
			case <-after:
			case <-d.work.Done():
			}
			d.r.request(d.work, m)
		}, true
	}
	q := queued{m: m, done: make(chan struct{})}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, false
	}
	select {
	case d.ordered <- q:
		d.lastQueued = q.done
		return nil, true
	case <-ctx.Done():
		return nil, false
	}
}

// close stops dispatching; the caller must have ended the reader's context
// first, so that a dispatch blocked on the ordered queue lets go.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// deliverOrdered delivers the ordered queue until it is closed.
func (d *dispatcher) deliverOrdered() {
	for q := range d.ordered {
		if err := d.r.chain.ToServer.Handle(d.work, q.m); err != nil && d.work.Err() == nil {
			d.r.log.Warn("could not deliver a message to the server", "method", q.m.Method(), "kind", q.m.Kind().String(), "err", err)
		}
		close(q.done)
	}
}

// queued is a notification or client answer waiting for its turn.
type queued struct {
	m    frame.Message
	done chan struct{} // closed once m was handled
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// request sends one client request (or batch) and makes sure it is
// answered.
func (r *relay) request(ctx context.Context, m frame.Message) {
	err := r.chain.ToServer.Handle(ctx, m)
	if err == nil {
		return
	}
	if m.Kind() == frame.Batch {
		r.answerBatch(m, err)
		return
	}
	if errors.Is(context.Cause(ctx), frame.ErrClosed) {
		err = frame.ErrClosed
	}
	r.log.Warn("request failed", "method", m.Method(), "id", m.ID().String(), "err", err)
	r.answer(mw.ErrorFor(m, err))
}

// answerBatch answers every request of a batch that could not be delivered,
// as one batch of errors.
func (r *relay) answerBatch(batch frame.Message, err error) {
	var out []byte
	for _, el := range batch.Get("@this").Array() {
		m, perr := frame.Parse([]byte(el.Raw))
		if perr != nil || m.Kind() != frame.Request {
			continue
		}
		e := mw.ErrorFor(m, err)
		if out == nil {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		out = append(out, e.Bytes()...)
	}
	if out == nil {
		return
	}
	out = append(out, ']')
	if m, perr := frame.Parse(out); perr == nil {
		r.answer(m)
	}
}

// stdinReader reads the client's messages and hands each to dispatch, until
// the input ends, ctx ends or dispatch gives up; then it closes done. Lines
// that cannot be used are answered here.
//
// One goroutine at a time holds the reader. When it reads a request, it
// hands the reader on and sends the request itself: the request leaves at
// once, on the thread that read it, instead of waiting for another thread
// to be woken to pick it up while this one blocks in the next read of
// stdin. Once the request is answered, its goroutine parks until it is
// handed the reader again (at most maxParkedReaders park; the others end),
// so the goroutines keep the stacks they have grown.
type stdinReader struct {
	r        *relay
	ctx      context.Context
	rd       *frame.Reader
	dispatch func(context.Context, frame.Message) (send func(), ok bool)
	done     chan struct{}

	lead   chan struct{} // hands the reader to a parked goroutine
	parked chan struct{} // one token per parked goroutine
}

// maxParkedReaders bounds the goroutines parked waiting for the reader.
const maxParkedReaders = 16

func newStdinReader(r *relay, ctx context.Context, in io.Reader, dispatch func(context.Context, frame.Message) (func(), bool), done chan struct{}) *stdinReader {
	return &stdinReader{
		r: r, ctx: ctx, rd: frame.NewReader(in, r.cfg.MaxMessageSize), dispatch: dispatch, done: done,
		lead: make(chan struct{}), parked: make(chan struct{}, maxParkedReaders),
	}
}

// run holds the reader: it reads until a request is read, hands the reader
// on, sends the request and parks; it closes done when reading ends.
func (s *stdinReader) run() {
	for {
		m, ok := s.next()
		if !ok {
			close(s.done)
			return
		}
		send, ok := s.dispatch(s.ctx, m)
		if !ok {
			close(s.done)
			return
		}
		if send == nil {
			continue
		}
		s.handOn()
		send()
		if !s.park() {
			return
		}
	}
}

// handOn gives the reader to a parked goroutine, or to a new one.
func (s *stdinReader) handOn() {
	select {
	case s.lead <- struct{}{}:
	default:
		go s.run()
	}
}

// park waits to be handed the reader. It returns false, and the goroutine
// ends, when reading is over or maxParkedReaders are parked already.
func (s *stdinReader) park() bool {
	select {
	case s.parked <- struct{}{}:
	default:
		return false
	}
	defer func() { <-s.parked }()
	select {
	case <-s.lead:
		return true
	case <-s.done:
		return false
	}
}

// next returns the next usable message, answering the lines that are not;
// ok is false once the input has ended or failed.
func (s *stdinReader) next() (m frame.Message, ok bool) {
	r := s.r
	for {
		m, err := s.rd.Read()
		if err != nil {
			var le *frame.LineError
			if errors.As(err, &le) {
				r.log.Warn("bad line on stdin", "line", le.Line, "err", le.Err)
				msg := "parse error: invalid JSON"
				if errors.Is(le.Err, frame.ErrTooLarge) {
					msg = fmt.Sprintf("message too large (limit %d bytes)", r.cfg.MaxMessageSize)
				}
				r.answer(frame.ErrorResponse(le.ID, le.Code(), msg))
				continue
			}
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil {
				r.log.Warn("stdin read failed", "err", err)
			}
			return frame.Message{}, false
		}
		switch {
		case m.Kind() == frame.Invalid:
			r.answer(frame.ErrorResponse("", frame.CodeInvalidRequest, "invalid request: not a JSON-RPC message"))
			continue
		case m.Kind() == frame.Request && mw.IsMinted(m.ID()):
			r.answer(frame.ErrorResponse(m.ID(), frame.CodeInvalidRequest, "invalid request: ids starting with \"mcp-stdio/\" are reserved"))
			continue
		}
		return m, true
	}
}
