package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
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
	// DefaultMaxBuffered is RelayConfig.MaxBuffered's default: two
	// messages at frame.DefaultMaxMessageSize, each counting up to twice
	// its size.
	DefaultMaxBuffered = 256 << 20
)

// RelayConfig configures a relay: one stdio client (the reader and writer
// given to [Relay]) carried to one remote MCP server.
type RelayConfig struct {
	// URL is the remote MCP endpoint (the SSE GET URL for TransportSSE).
	URL string
	// Transport is TransportAuto (the default when empty),
	// TransportStreamable or TransportSSE.
	Transport string
	// Era is how the era spoken to the server is picked: mw.EraAuto (the
	// default when empty) speaks the host's own era whenever the server
	// speaks it and bridges only when it does not (see mw.EraProbe);
	// mw.EraModern speaks 2026-07-28 whatever the host speaks;
	// mw.EraChoiceSession the session era (and HTTP+SSE) without probing.
	// With TransportSSE the era is the session era's.
	Era mw.EraChoice
	// ProbeTimeout bounds the era probe's server/discover; 0 means
	// mw.DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Header holds static headers sent with every HTTP request: -H entries,
	// a bearer token. They override the defaults (Content-Type, Accept).
	Header http.Header
	// HTTP configures the HTTP client (timeouts, TCP keepalive, proxies).
	// Ignored when HTTPClient is set.
	HTTP transport.HTTPOptions
	// HTTPClient, when set, sends every request instead of one built from
	// HTTP. Wrap its Transport to add authentication or tracing. Whatever
	// its CheckRedirect, the transports follow a redirect only as
	// FollowRedirects says.
	HTTPClient *http.Client
	// FollowRedirects lets the server's redirects (307 and 308), and an
	// HTTP+SSE endpoint event, lead to another origin than URL's; the
	// requests then go there without Authorization, Cookie or the Header
	// fields, and without the OAuth token (see
	// transport.StreamableClient.FollowRedirects). Without it such a
	// request fails with a *transport.RedirectError, and so, always, does
	// one redirected from https to plain http.
	FollowRedirects bool
	// SSEReadTimeout is the longest silence tolerated on a standing SSE
	// stream before it is reconnected; 0 means DefaultSSEIdle, negative
	// means no limit.
	SSEReadTimeout time.Duration
	// MaxMessageSize caps one message in either direction; 0 means
	// frame.DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxDepth bounds how deeply a message's JSON may nest, in either
	// direction; 0 means frame.DefaultMaxDepth. A deeper request is
	// refused with -32600, a deeper response answers its request with an
	// error.
	MaxDepth int
	// MaxBuffered bounds the bytes of the server's messages the relay
	// holds at once, all requests together (a frame.Budget over every
	// response body and event being read and delivered, on Streamable
	// HTTP's POST streams, its GET stream and HTTP+SSE): a message it
	// cannot take fails the request it answers (or, on a standing
	// stream, is skipped) and nothing else. A message counts as the
	// buffer holding it grows, doubling: up to twice its size, so a bound
	// under twice MaxMessageSize would refuse the largest messages. 0
	// means DefaultMaxBuffered, raised to twice MaxMessageSize when that
	// is larger; negative means no bound.
	MaxBuffered int64
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
	// NoCache removes the response cache (mw.ResponseCache): every list
	// and read goes to the server, whatever ttlMs its results carry.
	NoCache bool
	// AllowTools and DenyTools are the tool filter's glob patterns (see
	// mw.ToolFilter): a tool a DenyTools pattern matches, or that no
	// AllowTools pattern matches when there are some, is absent from
	// tools/list and its calls are refused. Both empty: no filter.
	AllowTools, DenyTools []string
	// Middlewares are extra stages, placed just inside the cancel filter:
	// they see every message the client sends and every message it gets
	// except responses to requests it cancelled. Use them to deny a tool,
	// redact a field, or log.
	Middlewares []mw.Middleware
	// ParamHeaders says when tools/call arguments annotated x-mcp-header
	// are mirrored into Mcp-Param-* headers (see mw.ParamHeaders): the zero
	// value, mw.ParamHeadersModern, on a 2026-07-28 server only.
	ParamHeaders mw.ParamHeaderMode
	// Retry tunes the retry stage (attempts, backoff, the sleep used between
	// attempts).
	Retry mw.RetryOptions
	// Auth, when set, is the re-authorisation stage's view of an OAuth
	// client; the HTTP client must then add its token to every request.
	Auth mw.Authorizer
	// Advice, when set, says what the user can do about a server that
	// cannot be used (see [Unreachable]); its answer ends the message.
	// The command line names its flags there.
	Advice func(u *Unreachable) string
	// Remedy, when set, says what the user can do about a request that
	// failed for a setting of theirs (a redirect not followed, the memory
	// budget used up: see FollowRedirects and MaxBuffered), or returns "".
	// Its answer ends the error the host gets for the request, and so the
	// warning logged for it; and the warning for a failure of the GET
	// stream (one per change of failure) or a message skipped on a
	// standing stream (the first of each stream).
	Remedy func(err error) string
	// Version is the program's version: the clientInfo version the relay
	// declares for itself ("mcp-stdio") where the host has not said who it
	// is — the initialize it sends for a 2026-07-28 host that names no
	// clientInfo, its requests to a 2026-07-28 server before the host
	// spoke ("" means "unknown").
	Version string
	// Logger receives diagnostics; nil discards them. Never stdout.
	Logger *slog.Logger
	// AccessLogInfo logs the record Logger gets for each request of the
	// host (mw.RelayAccessLog) at Info, as the relay's --log-format json
	// asks; else at Debug.
	AccessLogInfo bool
	// Spans receives a client span for each request sent to the server
	// (mw.TraceHeaders), whose context the traceparent header carries;
	// nil records none, and a host's own _meta.traceparent is still sent
	// as the header (on Streamable HTTP and on HTTP+SSE's POSTs).
	Spans mw.SpanExporter
	// Sampler picks the spans recorded; nil means parent-based, always on.
	Sampler mw.Sampler

	// lookup is the look for the server's OAuth metadata after a refusal
	// (see Unreachable.OAuthMetadata), shared by the copies of the
	// configuration a relay makes; set by defaults.
	lookup *mw.OAuthMetadataLookup
}

func (c *RelayConfig) defaults() {
	if c.Transport == "" {
		c.Transport = TransportAuto
	}
	if c.Era == "" {
		c.Era = mw.EraAuto
	}
	if c.Transport == TransportSSE && c.Era == mw.EraAuto {
		c.Era = mw.EraChoiceSession // HTTP+SSE is 2024-11-05's
	}
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = frame.DefaultMaxMessageSize
	}
	if c.MaxBuffered == 0 {
		c.MaxBuffered = max(DefaultMaxBuffered, 2*int64(c.MaxMessageSize))
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
	if c.lookup == nil {
		c.lookup = &mw.OAuthMetadataLookup{}
	}
}

// Relay carries the newline-delimited JSON-RPC client on in and out to the
// remote server cfg names, until in ends or ctx is cancelled. Then it lets
// in-flight requests finish (bounded by cfg.DrainTimeout), answers those
// that could not with an error, ends the server session, and returns nil.
//
// A server that cannot be used does not end the relay: the host is still
// there to show the user why. A failed initialize is answered with an
// [Unreachable] that explains the failure (status, URL, likely cause, the
// server's own words), and when the HTTP+SSE stream cannot be opened at
// all (refused, or no endpoint event in time) every request is answered
// so until in ends; Relay then returns that *Unreachable. It returns other
// errors only for a configuration it cannot run.
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
	cfg.defaults()
	var r *relay // set before stdio serves, and so before Failed is called
	answer := mw.AnswerFailures(func(err error) (error, bool) { return r.unusable(err) })
	stdio := transport.NewStdio(in, out, transport.StdioConfig{
		MaxMessageSize: cfg.MaxMessageSize,
		MaxDepth:       cfg.MaxDepth,
		MaxInFlight:    cfg.MaxInFlight,
		DrainTimeout:   cfg.DrainTimeout,
		Failed:         func(req frame.Message, err error) frame.Message { return answer(req, r.remedied(err)) },
		Draining:       func(ctx context.Context) { _ = r.listens.Close(ctx) }, // each gets its final result
		Logger:         cfg.Logger,
	})
	r, err := newRelay(cfg, stdio, false)
	if err != nil {
		return err
	}
	return r.run(ctx, stdio)
}

// unusable tells the failures that show the server cannot be used (see
// mw.AnswerFailures), with their explanation: the HTTP+SSE stream that
// could not be opened, for every request; a status without the server's
// own JSON-RPC error, or a network failure, for the handshake.
func (r *relay) unusable(err error) (why error, everyRequest bool) {
	unusable, everyRequest := mw.ServerUnusable(err)
	if !unusable {
		return nil, false
	}
	if u := r.cfg.explain(err); u != nil {
		return u, everyRequest
	}
	return nil, false
}

// remedied returns the failure of a request with what the user can do
// about it (RelayConfig.Remedy): err itself when there is nothing to add,
// or when it shows the server cannot be used (that explanation carries
// its own advice). The stdio transport logs the answer it makes of it.
func (r *relay) remedied(err error) error {
	if errors.Is(err, frame.ErrCancelled) {
		return err
	}
	if why, _ := r.unusable(err); why != nil {
		return err
	}
	return r.withRemedy(err)
}

// remediedError is a failure followed by what the user can do about it.
type remediedError struct {
	err    error
	remedy string
}

func (e *remediedError) Error() string { return e.err.Error() + "; " + e.remedy }
func (e *remediedError) Unwrap() error { return e.err }

// relay is one relay pipeline: the chain of stages in front of the
// server's HTTP transport.
type relay struct {
	cfg     RelayConfig
	log     *slog.Logger
	conn    *mw.Conn
	session *mw.Session
	probe   *mw.EraProbe
	// listens are the 2026-07-28 host's subscriptions/listen the relay
	// serves for a session-era server (mw.ServeListen).
	listens *mw.ListenStreams
	chain   mw.Duplex
	// toolFilter is the tool filter (mw.ToolFilter); nil for none.
	toolFilter mw.Middleware
	// reached tells the retry stages of both chains whether the server
	// has answered yet: a server never reached is not tried again, so the
	// host hears at once that nothing is there.
	reached mw.Reached
	// runner is the transport's background work (the HTTP+SSE stream), or
	// nil.
	runner func(context.Context) error
	// built is the HTTP client the relay made for itself, or nil.
	built *http.Client
	// Set by start: stopRunner stops the background work, runDone is
	// closed when it has ended, and runErr is what it failed with.
	stopRunner context.CancelFunc
	runDone    chan struct{}
	runErr     error
}

// newRelay builds the chain between client, where it delivers what the
// server sends, and the server cfg names. cfg has its defaults. oneShot
// makes the HTTP+SSE stream give up at its first failure, for [Check].
func newRelay(cfg RelayConfig, client mw.Handler, oneShot bool) (*relay, error) {
	if cfg.URL == "" {
		return nil, errors.New("relay: no server URL")
	}
	if cfg.Era == mw.EraModern && cfg.Transport == TransportSSE {
		return nil, errors.New("relay: --era modern needs Streamable HTTP, not the HTTP+SSE transport")
	}
	if _, err := mw.ParseEraChoice(string(cfg.Era)); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r := &relay{cfg: cfg, log: cfg.Logger, conn: mw.NewConn(mw.EraSession)}
	filter, err := mw.ToolFilter(mw.ToolFilterOptions{Allow: cfg.AllowTools, Deny: cfg.DenyTools, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	r.toolFilter = filter

	// The server's transports are built before the chains, so their
	// client-bound exits are bound once the chains exist: one for the
	// session era (auto, Streamable HTTP or HTTP+SSE), one for 2026-07-28
	// (Streamable HTTP's per-request exchange).
	var toClient, toModern mw.Late
	w, err := buildTransport(cfg, &toClient, &toModern, oneShot)
	if err != nil {
		return nil, err
	}
	r.runner, r.built = w.runner, w.built
	streams := w.streams
	if streams != nil && cfg.Remedy != nil {
		streams = &remedyStreams{StreamTransport: streams, cfg: &r.cfg}
	}
	r.session = mw.NewSession(mw.SessionOptions{Transport: streams, Conn: r.conn, Logger: cfg.Logger,
		// The new session holds none of the old one's subscriptions.
		Reestablished: func() { r.listens.Interrupt(errSessionReestablished) }})
	r.probe = mw.NewEraProbe(mw.EraProbeOptions{Choice: cfg.Era, Conn: r.conn, Timeout: cfg.ProbeTimeout, ClientVersion: cfg.Version, Logger: cfg.Logger})
	modern := mw.Chain(r.modernEraStages()...)(mw.Duplex{ToServer: w.modern, ToClient: r.probe.ModernClient()})
	toModern.Bind(modern.ToClient)
	r.chain = mw.Chain(slices.Concat(
		r.outerStages(),
		[]mw.Middleware{r.probe.Middleware(modern.ToServer)}, // the era fork
		r.sessionEraStages(),
	)...)(mw.Duplex{ToServer: w.wire, ToClient: client})
	toClient.Bind(r.chain.ToClient)
	return r, nil
}

// outerStages lists the stages both eras share, nearest the client
// first; the era fork follows them.
func (r *relay) outerStages() []mw.Middleware {
	cfg := r.cfg
	var cancel mw.Middleware
	if !cfg.NoCancelFilter {
		cancel = mw.CancelFilter(mw.CancelOptions{Logger: cfg.Logger})
	}
	answerWait := cfg.HTTP.ReadTimeout
	if answerWait <= 0 {
		answerWait = transport.DefaultReadTimeout
	}
	return slices.Concat(
		[]mw.Middleware{
			r.accessLog(),
			mw.AnswerOnce(mw.AnswerOnceOptions{Wait: answerWait, Logger: cfg.Logger}),
			mw.ReservedIDs(cfg.Logger),
			cancel,
			r.toolFilter, // above the era fork: both eras, the merged lists, the cache
		},
		cfg.Middlewares,
	)
}

// accessLog returns the stage that logs each request of the host once
// it has ended. It is the outermost stage, shared by both eras' chains,
// so that the answers the stages inside make themselves are logged too.
func (r *relay) accessLog() mw.Middleware {
	level := slog.LevelDebug
	if r.cfg.AccessLogInfo {
		level = slog.LevelInfo
	}
	return mw.RelayAccessLog(mw.RelayAccessLogOptions{Logger: r.cfg.Logger, Level: level, SessionID: r.session.ID})
}

// sessionEraStages lists the relay's stages for a session-era server,
// nearest the client first (inside the era fork).
func (r *relay) sessionEraStages() []mw.Middleware {
	cfg := r.cfg
	return slices.Concat(r.modernHostStages(), []mw.Middleware{
		mw.PaginationMerge(mw.PaginationOptions{Logger: cfg.Logger}),
		r.responseCache(),
		r.paramHeaders(),
		r.session.Middleware(),
		r.traceHeaders(),
		mw.Retry(r.retryOptions()),
		r.reauth(),
		mw.SingleAnswers(cfg.Logger),
	})
}

// modernHostStages lists the era bridges that let a 2026-07-28 host (its
// lines carry the _meta protocol version) speak to a session-era server,
// nearest the client first, at the head of the session-era chain. Each
// acts on a 2026-07-28 host's lines only; a session-era host's pass them.
// The host's server/discover is answered from the server's initialize
// result (the relay makes the handshake itself when the host made none),
// the io.modelcontextprotocol/* _meta keys are taken off its requests,
// its results stamped, and its subscriptions/listen served from the
// session's own notifications (r.modernHostListens). The cache hints say
// ttlMs 0: the relay has no setting for them, and 0 is never stale.
func (r *relay) modernHostStages() []mw.Middleware {
	cfg := r.cfg
	return []mw.Middleware{
		mw.StampResults(mw.StampOptions{CacheTTL: -1, Logger: cfg.Logger}),
		r.modernHostServerRequests(),
		r.modernHostListens(mw.HandshakeForModern(mw.HandshakeOptions{ClientVersion: cfg.Version, Logger: cfg.Logger})),
		mw.LocalDiscover(mw.LocalDiscoverOptions{KeepResourceSubscribe: mw.ServesResourceSubscriptions, Logger: cfg.Logger}),
		mw.StripModernMeta(),
	}
}

// modernHostListens returns the stage that makes the handshake for a
// 2026-07-28 host (handshake, mw.HandshakeForModern) and serves its
// subscriptions/listen for a session-era server, serve's
// (mw.ServeListen), guarded by mw.ForModernHost: the listen is
// acknowledged first with the subset the server's capabilities back; the
// server's list_changed and resources/updated, from the GET stream and
// the POST streams alike, go stamped to the listens that asked for them
// (and to no one else: a 2026-07-28 host gets change notifications on a
// listen only); its resourceSubscriptions become resources/subscribe and,
// when the last listen lets go, resources/unsubscribe. It sits inside the
// handshake, which the listen waits for when it is the host's first
// request, so the honoured subset is the server's; both are under one
// guard, which so never takes the handshake's own initialize for a
// session-era host's. A listen's Handle runs until it ends (AwaitEnd), so
// that its end is the host's answer: the final result when stdin ends
// (the drain ends the listens first), an error saying why when it ends
// abruptly (the session re-established without its subscriptions), and
// nothing when the host cancels it. Notifications are handed on as the
// server's stream delivers them (Inline), in its order, as everything
// else the server sends reaches stdout.
func (r *relay) modernHostListens(handshake mw.Middleware) mw.Middleware {
	listen, listens := mw.ServeListen(mw.ServeListenOptions{AwaitEnd: true, Inline: true, LimitFlag: "-", CounterIDs: true, Logger: r.cfg.Logger})
	r.listens = listens
	return mw.ForModernHost(mw.Chain(handshake, listen))
}

// errSessionReestablished ends the 2026-07-28 host's listens when the
// server's session is re-established.
var errSessionReestablished = errors.New("the listen ended: the server forgot the session, and the new one has none of its subscriptions; listen again")

// modernHostServerRequests returns the stage that turns a session-era
// server's own requests (sampling, elicitation, roots) into input_required
// results for a 2026-07-28 host (MRTR, the other way round from
// mw.MRTRBridge): mw.ParkChildRequests, guarded by mw.ForModernHost so
// that a session-era host still gets the server's requests as requests.
// It sits outside the handshake and the stripping of _meta, whose
// clientCapabilities tell which input the host can give. The relay has
// one host: the principal is "" and the state key and replica id are made
// here, for this process only (a requestState outlives neither, so there
// is nothing to share and no flag). Its retries' Handle waits for their
// answers (AwaitRetryAnswers), as the relay's chain requires.
func (r *relay) modernHostServerRequests() mw.Middleware {
	return mw.ForModernHost(mw.ParkChildRequests(mw.ParkOptions{
		StateKey:          mw.NewStateKey(),
		ReplicaID:         mw.NewReplicaID(),
		AwaitRetryAnswers: true,
		Logger:            r.cfg.Logger,
	}))
}

// modernEraStages lists the relay's stages for a 2026-07-28 server, nearest
// the client first (inside the era fork). There is no session: nothing
// opens a GET stream or sends a DELETE. Each bridge acts only on what a
// session-era client sends; a 2026-07-28 client's lines pass them, and
// only the routing headers are derived from their bodies.
func (r *relay) modernEraStages() []mw.Middleware {
	cfg := r.cfg
	retry := r.retryOptions()
	retry.Reissue = true // no resumption in 2026-07-28: a new id each time
	return []mw.Middleware{
		mw.CloseOnCancel(cfg.Logger),
		mw.CleanResults(),
		mw.MRTRBridge(mw.MRTROptions{Logger: cfg.Logger}),
		mw.PaginationMerge(mw.PaginationOptions{Logger: cfg.Logger}),
		r.responseCache(),
		r.paramHeaders(),
		mw.ListenBridge(mw.ListenOptions{Logger: cfg.Logger}),
		// Inside the listen bridge, which sees the handshake's answer and
		// the host's notifications/initialized pass before they are
		// answered and swallowed here.
		mw.LocalAnswers(mw.LocalAnswersOptions{Logger: cfg.Logger}),
		mw.InjectMeta(mw.MetaOptions{ClientVersion: cfg.Version, Logger: cfg.Logger}),
		mw.RoutingHeaders(),
		r.traceHeaders(),
		mw.Retry(retry),
		r.reauth(),
		mw.SingleAnswers(cfg.Logger),
	}
}

// traceHeaders returns the stage that sends a host's trace context as the
// traceparent and tracestate headers, with a client span per request
// when cfg.Spans is set. In both chains it sits just outside retry, so
// every attempt carries the same headers, and inside the stages that
// make requests of their own (pages, the handshake), which get spans
// too.
func (r *relay) traceHeaders() mw.Middleware {
	return mw.TraceHeaders(mw.TraceOptions{Exporter: r.cfg.Spans, Sampler: r.cfg.Sampler})
}

// paramHeaders returns the Mcp-Param-* stage, acting as
// cfg.ParamHeaders says. In both chains it sits just inside the response
// cache: it sees every page of a list fetched from the server (a cached
// page was checked when it was fetched) and its own tools/list is never
// answered from the cache; in the 2026-07-28 chain it is also inside the
// MRTR bridge (each round of a call gets its headers) and outside _meta
// injection and the routing headers (its own requests get them).
func (r *relay) paramHeaders() mw.Middleware {
	return mw.ParamHeaders(mw.ParamHeadersOptions{Mode: r.cfg.ParamHeaders, Logger: r.cfg.Logger})
}

// retryOptions returns the retry stage's options.
func (r *relay) retryOptions() mw.RetryOptions {
	retry := r.cfg.Retry
	if retry.Logger == nil {
		retry.Logger = r.cfg.Logger
	}
	if retry.Reached == nil {
		retry.Reached = &r.reached
	}
	return retry
}

// responseCache returns the response cache stage, or nil when
// RelayConfig.NoCache turns it off. Each chain gets its own: only one of
// them carries the connection's traffic once the era is known.
func (r *relay) responseCache() mw.Middleware {
	if r.cfg.NoCache {
		return nil
	}
	return mw.ResponseCache(mw.CacheOptions{Logger: r.cfg.Logger})
}

// reauth returns a re-authorisation stage, or nil without OAuth.
func (r *relay) reauth() mw.Middleware {
	if r.cfg.Auth == nil {
		return nil
	}
	return mw.Reauth(mw.ReauthOptions{Authorizer: r.cfg.Auth, Logger: r.cfg.Logger})
}

// run carries the client's messages from stdio until its input ends or
// ctx is done, then drains and shuts down. When the transport's background
// work fails (the HTTP+SSE stream could not be opened), the relay goes on:
// every request is answered with the failure (see failed), and the
// failure, explained, is what run returns at the end.
func (r *relay) run(ctx context.Context, stdio *transport.Stdio) error {
	ctx = mw.WithConn(ctx, r.conn)
	r.start(ctx, func() {
		if u := r.cfg.explain(r.runErr); u != nil {
			r.log.Error("cannot use the MCP server: " + u.Error() + " (every request gets this error until stdin closes)")
		}
	})
	_ = stdio.Serve(ctx, r.chain.ToServer) // a failed read is logged there
	// A server found to speak 2026-07-28 after its refusal of the host's
	// initialize sent the session era's transport to HTTP+SSE, which
	// failed: that failure is not the relay's.
	if err := r.stop(ctx); err != nil && r.conn.Era() != mw.EraStateless {
		if u := r.cfg.explain(err); u != nil {
			return u
		}
		return err
	}
	return nil
}

// start starts the transport's background work (the HTTP+SSE stream),
// which carries the answers of requests in flight and so runs until stop.
// If it fails, failed is called.
func (r *relay) start(ctx context.Context, failed func()) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stopRunner, r.runDone = cancel, make(chan struct{})
	if r.runner == nil {
		close(r.runDone)
		return
	}
	go func() {
		defer close(r.runDone)
		if r.runErr = r.runner(runCtx); r.runErr != nil {
			failed()
		}
	}()
}

// stop ends the server session, stops the background work and lets the
// idle connections go. It returns the error the background work failed
// with, if it did.
func (r *relay) stop(ctx context.Context) error {
	// The connection ends: what stages keep for it (the listen bridge's
	// streams) lets go.
	r.conn.Close(errRelayEnded)
	endCtx, cancelEnd := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.DrainTimeout)
	if err := r.session.Close(endCtx); err != nil {
		r.log.Warn("could not end the server session", "err", r.withRemedy(err))
	}
	cancelEnd()
	r.stopRunner()
	<-r.runDone
	if r.built != nil {
		// Nothing is in flight any more: let the kept-alive connections
		// (and their goroutines) go now, not when the process exits.
		r.built.CloseIdleConnections()
	}
	return r.runErr
}

// withRemedy returns err followed by RelayConfig.Remedy's advice, if any.
func (r *relay) withRemedy(err error) error {
	if r.cfg.Remedy == nil {
		return err
	}
	if remedy := r.cfg.Remedy(err); remedy != "" {
		return &remediedError{err: err, remedy: remedy}
	}
	return err
}

// remedyStreams logs the failures of the GET stream that the user's
// settings can change, with RelayConfig.Remedy's advice: at warning level
// when the failure differs from the last one, else at debug (the session
// stage opens the stream again and again).
type remedyStreams struct {
	mw.StreamTransport
	cfg *RelayConfig

	mu   sync.Mutex
	last string
}

func (s *remedyStreams) Listen(ctx context.Context, h http.Header, opened func()) (string, error) {
	last, err := s.StreamTransport.Listen(ctx, h, opened)
	if err == nil || ctx.Err() != nil {
		return last, err
	}
	if remedy := s.cfg.Remedy(err); remedy != "" {
		text := err.Error()
		s.mu.Lock()
		level := slog.LevelWarn
		if text == s.last {
			level = slog.LevelDebug
		}
		s.last = text
		s.mu.Unlock()
		s.cfg.Logger.Log(ctx, level, "the GET stream failed: "+text+"; "+remedy)
	}
	return last, err
}

// errRelayEnded is why the relay's connection ends.
var errRelayEnded = errors.New("relay: ended")

// wiring is the transport side of a relay.
type wiring struct {
	wire    mw.Handler         // sends messages (session era)
	modern  mw.Handler         // sends messages (2026-07-28)
	streams mw.StreamTransport // GET stream and DELETE; nil on HTTP+SSE
	runner  func(context.Context) error
	// built is the HTTP client made here (nil when the config supplied
	// one); its idle connections are closed when the relay ends.
	built *http.Client
}

// buildTransport builds the transport cfg names, delivering what the server
// sends to sink, and the Streamable HTTP client a 2026-07-28 server is
// spoken to with, delivering to modernSink. oneShot: see newRelay.
func buildTransport(cfg RelayConfig, sink, modernSink transport.Sink, oneShot bool) (wiring, error) {
	var budget *frame.Budget
	if cfg.MaxBuffered > 0 {
		budget = frame.NewBudget(cfg.MaxBuffered)
	}
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
		MaxDepth:          cfg.MaxDepth,
		IdleTimeout:       readTimeout,
		StreamIdleTimeout: cfg.SSEReadTimeout,
		FollowRedirects:   cfg.FollowRedirects,
		Budget:            budget,
		Remedy:            cfg.Remedy,
		Logger:            cfg.Logger,
	}
	sse := &transport.SSEClient{
		URL:                  cfg.URL,
		Client:               client,
		Header:               cfg.Header,
		ToClient:             sink,
		MaxMessageSize:       cfg.MaxMessageSize,
		MaxDepth:             cfg.MaxDepth,
		FirstEndpointTimeout: connectTimeout,
		EndpointWait:         readTimeout,
		IdleTimeout:          cfg.SSEReadTimeout,
		AuthLater:            cfg.Auth != nil && !oneShot,
		FollowRedirects:      cfg.FollowRedirects,
		Budget:               budget,
		Remedy:               cfg.Remedy,
		Logger:               cfg.Logger,
	}
	if oneShot {
		sse.StartAttempts = 1
	}
	modern := *streamable // its own sink; nothing else differs
	modern.ToClient = modernSink
	switch cfg.Transport {
	case TransportAuto:
		auto := &transport.Auto{Streamable: streamable, SSE: sse, Logger: cfg.Logger}
		return wiring{wire: auto, modern: &modern, streams: auto, runner: auto.Run, built: built}, nil
	case TransportStreamable:
		return wiring{wire: streamable, modern: &modern, streams: streamable, built: built}, nil
	case TransportSSE:
		return wiring{wire: sse, modern: &modern, runner: sse.Run, built: built}, nil
	}
	return wiring{}, fmt.Errorf("relay: unknown transport %q (want %s, %s or %s)", cfg.Transport, TransportAuto, TransportStreamable, TransportSSE)
}
