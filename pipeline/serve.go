// The serve pipeline: remote HTTP clients to a local stdio MCP server, one
// child process per session. Its stages are drawn in package mw's
// documentation.

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-stdio/mcp-stdio/auth"
	"github.com/mcp-stdio/mcp-stdio/auth/server"
	"github.com/mcp-stdio/mcp-stdio/frame"
	"github.com/mcp-stdio/mcp-stdio/frame/mcp"
	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/mw/httpguard"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// Serve defaults.
const (
	// DefaultServePath is the MCP endpoint's path.
	DefaultServePath = "/mcp"
	// DefaultSSEPath is the path of the HTTP+SSE transport's stream.
	DefaultSSEPath = "/sse"
	// DefaultMessagePath is the path the HTTP+SSE transport's messages
	// are POSTed to.
	DefaultMessagePath = "/message"
	// DefaultSessionIdleTimeout ends sessions idle this long.
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultServeDrainTimeout bounds a drain (see [Server.Drain]): 25
	// seconds, which with the children's TermGrace fits in Kubernetes'
	// default grace period of 30 seconds between SIGTERM and SIGKILL.
	DefaultServeDrainTimeout = 25 * time.Second
	// DefaultModernIdleTTL is the idle time after which the `serve` command
	// stops a child serving 2026-07-28 clients.
	DefaultModernIdleTTL = 30 * time.Minute
	// ServeTokenEnv names the environment variable holding serve's bearer
	// token. It is never passed on to children.
	ServeTokenEnv = "MCP_STDIO_SERVE_TOKEN"
	// ParentPIDEnv names the environment variable by which a parent asks
	// the serve command to end with it: the parent's own process id. The
	// npm package's launcher sets it for the binary it starts, so that
	// `npx mcp-stdio serve` does not outlive the launcher (npm's exec
	// does not pass a SIGTERM on to it, and serve, unlike the relay, has
	// no stdin whose end would tell it). It is never passed on to
	// children.
	ParentPIDEnv = "MCP_STDIO_PARENT_PID"
	// StateKeyEnv names the environment variable holding the key that
	// seals requestState (see ServeConfig.StateKey). It is never passed on
	// to children.
	StateKeyEnv = "MCP_STDIO_STATE_KEY"
	// ParkGather is how long the first request a session-era child asks
	// for a call waits for the others it sends with it, so that they
	// reach the 2026-07-28 client in one input_required result (see
	// mw.ParkOptions.Gather).
	ParkGather = 25 * time.Millisecond
)

// ServeConfig configures [NewServer]: which stdio server to run, once per
// session, and who may reach it.
type ServeConfig struct {
	// Command is the stdio server's program and arguments; required.
	Command []string
	// Env is the children's environment; nil means the gateway's own. The
	// variables ServeTokenEnv, StateKeyEnv, server.IntrospectionSecretEnv
	// and ParentPIDEnv are always removed.
	Env []string
	// Dir is the children's working directory; "" means the gateway's.
	Dir string
	// Supervisor is the command each child runs under, on Linux (see
	// transport.ChildConfig.Supervisor): for mcp-stdio, its own executable
	// and "supervise". Under it the processes a child starts end with the
	// gateway even when it is killed; nil starts children directly, and
	// then only the child itself does.
	Supervisor []string
	// Path is the MCP endpoint's path; "" means DefaultServePath. Other
	// paths get 404, but for those of the HTTP+SSE transport.
	Path string
	// SSEPath and MessagePath are the paths of the HTTP+SSE transport
	// (MCP 2024-11-05), for clients that speak nothing newer: the GET
	// stream, and where its messages are POSTed. "" means DefaultSSEPath
	// and DefaultMessagePath. They may be one path, but not Path.
	SSEPath     string
	MessagePath string
	// NoSSE turns the HTTP+SSE transport off: its paths get 404.
	NoSSE bool
	// HealthPath, when set, is a path that answers GET and HEAD with 200
	// "ok" before any other check (origin, host, authentication), for load
	// balancers and liveness probes. It must differ from Path, and from
	// the HTTP+SSE paths unless NoSSE.
	HealthPath string

	// AuthToken, when set, is a static bearer token every request must
	// present (else 401, and no child is started). It excludes OAuth.
	AuthToken string
	// OAuth, when set, makes serve an OAuth 2.1 protected resource: every
	// request presents an access token, whose principal owns its
	// sessions and keys the 2026-07-28 pool; see [OAuthConfig]. It
	// excludes AuthToken.
	OAuth *OAuthConfig
	// AllowOrigins are extra Origin values allowed past the origin check,
	// compared exactly (any scheme). Loopback origins and the origin of
	// PublicURL are always allowed; requests without Origin pass.
	AllowOrigins []string
	// CheckHost turns on the DNS-rebinding guard: the Host header must name
	// a loopback host (localhost, 127.0.0.1, [::1]), an AllowHosts entry or
	// PublicURL's host. Turn it on when listening on a loopback address.
	CheckHost bool
	// AllowHosts are extra host names (no port) for the Host check.
	AllowHosts []string
	// PublicURL is the server's external URL (behind a proxy or tunnel); its
	// origin and host are allowed. Its path, if any, is the prefix under
	// which the proxy publishes the server: the HTTP+SSE endpoint event
	// names MessagePath under it.
	PublicURL string

	// DropClientCapabilities names client capabilities ("roots",
	// "sampling", "elicitation") removed from every initialize before the
	// child sees it.
	DropClientCapabilities []string
	// AllowTools and DenyTools are the tool filter's glob patterns (see
	// mw.ToolFilter), on every era's face: a tool a DenyTools pattern
	// matches, or that no AllowTools pattern matches when there are some,
	// is absent from tools/list and its calls are refused. Both empty: no
	// filter.
	AllowTools, DenyTools []string
	// Middlewares are extra stages between the HTTP side and the child,
	// nearest the client first; they are built once per session.
	Middlewares []mw.Middleware

	// MaxSessions bounds the sessions (children) alive at once; 0 means
	// mw.DefaultMaxSessions.
	MaxSessions int
	// SessionIdleTimeout ends a session without requests or open streams
	// for this long; 0 means DefaultSessionIdleTimeout, negative never.
	SessionIdleTimeout time.Duration
	// MaxBodySize caps a request body (413 beyond); 0 means
	// frame.DefaultMaxMessageSize.
	MaxBodySize int64
	// MaxMessageSize caps a line a child writes; 0 means
	// frame.DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxDepth bounds how deeply a message's JSON may nest, in a request
	// body (400 with -32600 beyond) or a line a child writes (a response
	// then answers its request with an error); 0 means
	// frame.DefaultMaxDepth.
	MaxDepth int
	// ReadTimeout bounds the silence while a request body arrives: a body
	// that stops arriving for this long gets 408 and its connection is
	// closed. 0 means transport.DefaultBodyReadTimeout, negative no bound.
	ReadTimeout time.Duration
	// Budget, when set, bounds the message bytes the server holds, across
	// all sessions (and anything else given the same budget): request
	// bodies while they are read and handed to a child, children's lines
	// until they are queued for their client, and answers until they are
	// written (see transport.HTTPServerConfig.Budget). A body it cannot
	// take gets 503; a child's line it cannot take is dropped and its
	// request answered with an error. nil means no bound but the caps of
	// one message.
	Budget *frame.Budget
	// StdinGrace and TermGrace time a child's shutdown when its session
	// ends (the client's DELETE, the idle timeout): stdin closed, then
	// SIGTERM to its process group after StdinGrace, then SIGKILL after
	// TermGrace; 0 means the transport defaults (2s each). When the
	// gateway itself shuts down ([Server.Close]) a child's group gets
	// SIGTERM at once, with its stdin closed, and SIGKILL after TermGrace.
	StdinGrace time.Duration
	TermGrace  time.Duration
	// DrainTimeout bounds a drain (see [Server.Drain]); 0 means
	// DefaultServeDrainTimeout.
	DrainTimeout time.Duration

	// MaxModernChildren bounds the children serving 2026-07-28 clients
	// (one per principal) alive at once; 0 means
	// mw.DefaultMaxPooledChildren.
	MaxModernChildren int
	// MaxListens bounds the subscriptions/listen streams open on one of
	// those children at once, its clients' together (mw.ServeListen for a
	// child of the session era, mw.ShareListens for a dual-era one); 0
	// means mw.DefaultMaxListens. One more gets 503 with Retry-After.
	MaxListens int
	// StateKey seals the requestState of the multi round-trip requests
	// serve makes for a session-era child's own requests (see
	// mw.ParkChildRequests): mw.StateKeySize bytes, shared by replicas
	// that share clients. nil means a key made at start (a restart then
	// voids the requestStates given out).
	StateKey []byte
	// Roots are the roots serve gives a child serving 2026-07-28 clients
	// that speaks only the session era when it asks roots/list and no
	// single client can be asked: its first roots/list (the roots of its
	// connection, which all its clients share), one sent while serve
	// starts it, or one sent while no call or several are in flight (see
	// mw.ParkOptions.Shared). Each is a URI (file://…); nil means none.
	Roots []string
	// InputTimeout is how long a call parked for its client's input (a
	// session-era child's elicitation, sampling or roots request, see
	// mw.ParkChildRequests) waits for the retry; its requestState expires
	// with it, and the call is then cancelled on the child. 0 means
	// mw.DefaultStateTTL.
	InputTimeout time.Duration
	// ReplicaID names this process among replicas sharing StateKey, and,
	// when set, begins every session id it issues (Streamable HTTP and
	// HTTP+SSE alike): "<ReplicaID>.<128 random bits>", so that a proxy
	// can route a session to its replica (see mw.ReplicaSessionIDs); it
	// must pass mw.CheckReplicaID. "" means session ids without a replica
	// and a random id, made at start, for the requestState.
	ReplicaID string
	// Name names this server among those [NewMulti] publishes on one
	// listener: its metrics carry the label server="Name", its log
	// records server=Name, and its children's stderr lines begin with
	// "[Name " rather than "[". It must pass [CheckServerName]; "" for a
	// server published alone.
	Name string
	// Version is the gateway's version, named in the clientInfo of the
	// handshakes it performs itself; "" means "0".
	Version string
	// Rand is read for the random part of the ids serve mints toward the
	// children of 2026-07-28 clients, drawn once per child and stage (see
	// mw.IDMinter.Randomize); it must be safe for concurrent use. nil
	// means crypto/rand; tests that pin minted ids give a fixed one.
	Rand io.Reader
	// CacheTTL is the ttlMs serve gives the cacheable results of a child
	// that speaks only the session era, for its 2026-07-28 clients (see
	// mw.StampResults): 0 means mw.DefaultCacheTTL, negative ttlMs 0.
	CacheTTL time.Duration
	// ModernIdleTTL closes a child serving 2026-07-28 clients that has had
	// no request in flight for this long; 0 keeps it until the gateway
	// stops.
	ModernIdleTTL time.Duration

	// Metrics turns on the counting of requests (by era, method and
	// outcome, with their durations) and of message bytes, which
	// AdminHandler's /metrics shows; it adds a stage in front of each
	// era's chain, and the guards count the requests they answer in error
	// (httpguard.CountRefusals). The other metrics (sessions, children, exits, sessions
	// not found, parked calls, draining) are kept regardless.
	Metrics bool

	// ChildStderr receives the children's stderr, each line prefixed with
	// its session's short id (mw.ShortSessionID, a hash); nil discards
	// it. With ChildStderrRecords it is not used.
	ChildStderr io.Writer
	// ChildStderrRecords makes each line of a child's stderr a record of
	// Logger's own, at Info: msg the line, source=child, and the session's
	// hash (session) or pool=2026-07-28 — for --log-format json.
	ChildStderrRecords bool
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// AccessLogInfo logs the record Logger gets for each request
	// (mw.AccessLog) at Info, as serve's --log-format json asks; else at
	// Debug.
	AccessLogInfo bool
	// Spans receives a server span for each request (mw.TraceContext),
	// and the child's traceparent names it; nil records none, the
	// request's own trace context is still carried to the child.
	Spans mw.SpanExporter
	// Sampler picks the spans recorded; nil means parent-based, always on.
	Sampler mw.Sampler
	// AfterFunc times idle sessions; nil means time.AfterFunc. For tests.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)

	// ModernOnly serves MCP 2026-07-28 alone: the session era is refused
	// on the endpoint (mw.ModernOnly: GET and DELETE get 405 with Allow:
	// POST, every session-era message 400 with -32022 naming the
	// 2026-07-28 versions), after the guards, authentication included. The
	// HTTP+SSE transport, which speaks the session era only, is off (as
	// with NoSSE).
	ModernOnly bool
	// AcceptClaimlessResourceRead takes a resources/read that claims no
	// era — no Mcp-Session-Id, no MCP-Protocol-Version, no _meta protocol
	// version — as a 2026-07-28 request (mw.ClassifyEraClaimless), its
	// version claim filled in; the routing headers it does send must still
	// match its body (mw.ValidateModern). Off, such a read is of the
	// session era, and refused for want of a session.
	AcceptClaimlessResourceRead bool
}

// Server is the serve pipeline: an http.Handler publishing a stdio MCP
// server over Streamable HTTP, and over HTTP+SSE for clients of 2024-11-05
// (unless NoSSE), one child process per session.
type Server struct {
	cfg      ServeConfig
	log      *slog.Logger
	env      []string
	stderr   io.Writer
	dropCaps mw.Middleware
	// toolFilter is the tool filter (mw.ToolFilter); nil for none.
	toolFilter mw.Middleware
	sessions   *mw.Sessions
	pool       *mw.Pool // the children of 2026-07-28 clients, one per principal
	// Stages of the session-era children of the pool, built once for all
	// of them, and the handle that ends their listens.
	listen  mw.Middleware
	listens *mw.ListenStreams
	// roots are cfg.Roots as the JSON array a roots/list result holds.
	roots []byte
	// The stage that shares the listens of the pool's dual-era children
	// (one listen on the child for all the clients asking the same), and
	// the handle that ends them.
	shareListen   mw.Middleware
	sharedListens *mw.SharedListens
	http          *transport.HTTPServer
	sse           *transport.SSEServer // nil when NoSSE
	handler       http.Handler

	metrics *serveMetrics
	ready   readiness
	// life ends at Close: the probes of the server command (see Ready)
	// run within it, counted by probes.
	life     context.Context
	endLife  context.CancelFunc
	probes   sync.WaitGroup
	draining atomic.Bool
	drained  atomic.Bool // the drain is over: see mw.RefuseAfterDrain

	drainOnce sync.Once
	drainErr  error
	closing   atomic.Bool // Close: children are stopped without the stdin grace
}

// NewServer checks cfg and assembles the pipeline. No child starts before
// the first initialize.
func NewServer(cfg ServeConfig) (*Server, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("serve: no server command")
	}
	if cfg.Path == "" {
		cfg.Path = DefaultServePath
	}
	if cfg.SSEPath == "" {
		cfg.SSEPath = DefaultSSEPath
	}
	if cfg.MessagePath == "" {
		cfg.MessagePath = DefaultMessagePath
	}
	for _, p := range []string{cfg.Path, cfg.SSEPath, cfg.MessagePath} {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("serve: path %q must start with /", p)
		}
	}
	if !cfg.NoSSE && (cfg.SSEPath == cfg.Path || cfg.MessagePath == cfg.Path) {
		return nil, fmt.Errorf("serve: the HTTP+SSE paths (%s, %s) must differ from the endpoint's, %s", cfg.SSEPath, cfg.MessagePath, cfg.Path)
	}
	endpoint, err := sseEndpoint(cfg.PublicURL, cfg.MessagePath)
	if err != nil {
		return nil, err
	}
	if cfg.HealthPath != "" && (!strings.HasPrefix(cfg.HealthPath, "/") || cfg.HealthPath == cfg.Path) {
		return nil, fmt.Errorf("serve: health path %q must start with / and differ from the endpoint's path", cfg.HealthPath)
	}
	if cfg.HealthPath != "" && !cfg.NoSSE && (cfg.HealthPath == cfg.SSEPath || cfg.HealthPath == cfg.MessagePath) {
		return nil, fmt.Errorf("serve: health path %q must differ from the HTTP+SSE paths (%s, %s)", cfg.HealthPath, cfg.SSEPath, cfg.MessagePath)
	}
	if cfg.SessionIdleTimeout == 0 {
		cfg.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if cfg.SessionIdleTimeout < 0 {
		cfg.SessionIdleTimeout = 0
	}
	if cfg.MaxBodySize <= 0 {
		cfg.MaxBodySize = frame.DefaultMaxMessageSize
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultServeDrainTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ModernOnly {
		cfg.NoSSE = true // see serveladder.go
	}
	if cfg.Name != "" {
		if err := CheckServerName(cfg.Name); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		cfg.Logger = cfg.Logger.With("server", cfg.Name)
	}
	toolFilter, err := mw.ToolFilter(mw.ToolFilterOptions{Allow: cfg.AllowTools, Deny: cfg.DenyTools, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	dropCaps, err := mw.DropClientCapabilities(cfg.DropClientCapabilities...)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, env: childEnv(cfg.Env), dropCaps: dropCaps, toolFilter: toolFilter}
	s.ready.now = time.Now
	s.metrics = newServeMetrics(s)
	if cfg.ChildStderr != nil && !cfg.ChildStderrRecords {
		s.stderr = &lineWriter{w: cfg.ChildStderr}
	}
	var newSessionID func() string // nil: the random ids of mw and transport
	if cfg.ReplicaID != "" {
		if err := mw.CheckReplicaID(cfg.ReplicaID); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		newSessionID = mw.ReplicaSessionIDs(cfg.ReplicaID)
	}
	s.sessions = mw.NewSessions(mw.SessionsOptions{
		NewID:       newSessionID,
		Open:        s.startSession,
		MaxSessions: cfg.MaxSessions,
		IdleTimeout: cfg.SessionIdleTimeout,
		AfterFunc:   cfg.AfterFunc,
		NotFound:    s.metrics.notFound.Inc,
		Logger:      cfg.Logger,
	})
	if cfg.StateKey == nil {
		cfg.StateKey = mw.NewStateKey()
	}
	if len(cfg.StateKey) != mw.StateKeySize {
		return nil, fmt.Errorf("serve: the state key must be %d bytes", mw.StateKeySize)
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = mw.NewReplicaID()
	}
	s.cfg = cfg
	s.listen, s.listens = mw.ServeListen(mw.ServeListenOptions{MaxListens: cfg.MaxListens, Rand: cfg.Rand, Logger: cfg.Logger})
	s.shareListen, s.sharedListens = mw.ShareListens(mw.ShareListensOptions{MaxListens: cfg.MaxListens, Rand: cfg.Rand, Logger: cfg.Logger})
	if s.roots, err = rootsJSON(cfg.Roots); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s.pool = mw.NewPool(mw.PoolOptions{
		Start:       s.startPooledChild,
		MaxChildren: cfg.MaxModernChildren,
		IdleTTL:     cfg.ModernIdleTTL,
		AfterFunc:   cfg.AfterFunc,
		Logger:      cfg.Logger,
	})
	eras := mw.ByEraWith(s.classifyEra(), s.sessionEra(), s.modernEra(), cfg.Logger)
	s.http = transport.NewHTTPServer(transport.HTTPServerConfig{
		Serve: func(ctx context.Context, m frame.Message, x *transport.Exchange) error {
			return eras.Handle(mw.WithExchange(ctx, x), m)
		},
		MaxBodySize: cfg.MaxBodySize,
		MaxDepth:    cfg.MaxDepth,
		ReadTimeout: cfg.ReadTimeout,
		Budget:      cfg.Budget,
		Logger:      cfg.Logger,
	})
	if !cfg.NoSSE {
		sse := s.sseSessionEra()
		s.sse = transport.NewSSEServer(s.http, transport.SSEServerConfig{
			Serve: func(ctx context.Context, m frame.Message, x *transport.Exchange) error {
				return sse.Handle(mw.WithExchange(ctx, x), m)
			},
			StreamPath:   cfg.SSEPath,
			MessagePath:  cfg.MessagePath,
			Endpoint:     endpoint,
			NewSessionID: newSessionID,
			NotFound:     s.metrics.notFound.Inc,
		})
	}
	routes, err := oauthRoutes(cfg, s.paths())
	if err != nil {
		return nil, err
	}
	s.handler = httpguard.Guards(s.guards(routes)...)(http.HandlerFunc(s.serveHTTP))
	s.life, s.endLife = context.WithCancel(context.Background())
	return s, nil
}

// serveHTTP hands a request that passed the guards to the transport of
// its path.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == s.cfg.Path || s.sse == nil {
		s.http.ServeHTTP(w, r)
		return
	}
	s.sse.ServeHTTP(w, r)
}

// paths returns the paths served: the endpoint's, and those of the
// HTTP+SSE transport unless it is off.
func (s *Server) paths() []string {
	if s.cfg.NoSSE {
		return []string{s.cfg.Path}
	}
	return []string{s.cfg.Path, s.cfg.SSEPath, s.cfg.MessagePath}
}

// sseEndpoint returns what the HTTP+SSE endpoint event names: the message
// path, under the path of publicURL when there is one.
func sseEndpoint(publicURL, messagePath string) (string, error) {
	prefix := ""
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil {
			return "", fmt.Errorf("serve: public URL: %w", err)
		}
		prefix = strings.TrimSuffix(u.Path, "/")
	}
	return (&url.URL{Path: prefix + messagePath}).EscapedPath(), nil
}

// guards lists the HTTP guards, the first to see a request first. They
// decide on headers alone, before anything reads the body. routes are the
// handlers served without a token (OAuth's metadata and authorization
// server), by path.
func (s *Server) guards(routes map[string]http.Handler) []httpguard.Guard {
	cfg := s.cfg
	g := edgeGuardsOf(cfg)
	var countFront, countBack httpguard.Guard // nil unless Metrics
	if cfg.Metrics {
		countFront, countBack = httpguard.CountRefusals(s.metrics.refused)
	}
	return []httpguard.Guard{
		countFront,
		g.health, // before everything: a probe sends no Origin, a token or the public Host
		g.checkOrigin,
		g.checkHost,
		httpguard.ServePaths(slices.Concat(s.paths(), slices.Collect(maps.Keys(routes)))...),
		httpguard.CORS,          // behind the origin check, before authentication
		httpguard.Mount(routes), // the metadata a client reads to get a token needs none
		g.bearer,
		oauthGuard(cfg), // before the era fork: both eras, POST, GET and DELETE
		httpguard.LimitBody(cfg.MaxBodySize),
		countBack,
	}
}

// edgeGuards are the guards cfg's settings ask for, each nil when off:
// one serve's and those in front of a [Multi]'s servers are the same.
type edgeGuards struct {
	health, checkOrigin, checkHost, bearer httpguard.Guard
}

func edgeGuardsOf(cfg ServeConfig) edgeGuards {
	g := edgeGuards{
		checkOrigin: httpguard.CheckOrigin(httpguard.OriginPolicy{Allow: cfg.AllowOrigins, PublicURL: cfg.PublicURL}),
	}
	if cfg.HealthPath != "" {
		g.health = httpguard.AnswerHealth(cfg.HealthPath)
	}
	if cfg.CheckHost {
		g.checkHost = httpguard.CheckHost(httpguard.HostPolicy{Allow: cfg.AllowHosts, PublicURL: cfg.PublicURL})
	}
	if cfg.AuthToken != "" {
		g.bearer = httpguard.RequireBearer(auth.NewBearerGate(cfg.AuthToken))
	}
	return g
}

// sessionEra is the chain of the session era, in front of the sessions:
// the protocol version is judged before the session.
func (s *Server) sessionEra() mw.Handler {
	return mw.Chain(
		s.countRequests(eraSession), // nil unless Metrics
		s.accessLog(eraSession),
		s.modernOnly(), // nil unless ModernOnly; see serveladder.go
		mw.CheckVersionHeader(),
		mw.RefuseNewSessions(mw.DrainOptions{Draining: s.Draining}),
		mw.RefuseAfterDrain(mw.AfterDrainOptions{Drained: s.drained.Load}),
		s.traceContext(eraSession),
	)(mw.Duplex{ToServer: s.sessions, ToClient: mw.Discard()}).ToServer
}

// modernEra is the chain of 2026-07-28 requests, in front of the pool of
// children: what can be judged without a child is judged before one is
// started.
func (s *Server) modernEra() mw.Handler {
	return mw.Chain(
		s.countRequests(eraModern),
		s.accessLog(eraModern),
		mw.ValidateModern(mw.ModernLadderOptions{AcceptClaimlessResourceRead: s.cfg.AcceptClaimlessResourceRead, Logger: s.log}),
		mw.RefuseAfterDrain(mw.AfterDrainOptions{Drained: s.drained.Load}),
		s.traceContext(eraModern),
	)(mw.Duplex{ToServer: s.pool, ToClient: mw.Discard()}).ToServer
}

// sseSessionEra is the chain of the HTTP+SSE transport, in front of the
// same sessions: its clients speak the session era (2024-11-05, or
// whatever their initialize negotiates).
func (s *Server) sseSessionEra() mw.Handler {
	return mw.Chain(
		s.countRequests(eraSSE),
		s.accessLog(eraSSE),
		mw.CheckVersionHeader(),
		mw.RefuseNewSessions(mw.DrainOptions{Draining: s.Draining, SSE: true}),
		mw.RefuseAfterDrain(mw.AfterDrainOptions{Drained: s.drained.Load}),
		s.traceContext(eraSSE),
	)(mw.Duplex{ToServer: s.sessions.SSE(), ToClient: mw.Discard()}).ToServer
}

// The eras as spans and access records name them.
const (
	eraSession = "session"
	eraModern  = mcp.Version20260728
	eraSSE     = "http+sse"
)

// accessLog is the stage that logs each request of era once it has
// ended, first in the era's chain so that the era's refusals are logged.
func (s *Server) accessLog(era string) mw.Middleware {
	level := slog.LevelDebug
	if s.cfg.AccessLogInfo {
		level = slog.LevelInfo
	}
	return mw.AccessLog(mw.AccessLogOptions{Logger: s.log, Level: level, Era: era})
}

// traceContext is the stage that carries a request's trace context to
// the child, and records its span: last before the sessions or the pool,
// behind the era's checks.
func (s *Server) traceContext(era string) mw.Middleware {
	return mw.TraceContext(mw.TraceOptions{Exporter: s.cfg.Spans, Sampler: s.cfg.Sampler, Era: era})
}

// sessionStages lists the stages of one session, nearest the client
// first; the session's child is behind them.
func (s *Server) sessionStages(conn *mw.Conn, log *slog.Logger) []mw.Middleware {
	return slices.Concat(
		[]mw.Middleware{
			mw.Route(mw.RouteOptions{Conn: conn, Logger: log}),
			mw.RefuseDuplicateIDs(mw.DuplicateIDsOptions{Logger: log}),
			mw.Unbatch(),
			mw.CancelFilter(mw.CancelOptions{Logger: log}),
			s.toolFilter,
		},
		s.cfg.Middlewares,
		[]mw.Middleware{s.dropCaps},
	)
}

// Handler returns the HTTP handler to serve (on every path; only the MCP
// endpoint's path and those of HTTP+SSE answer).
func (s *Server) Handler() http.Handler { return s.handler }

// Sessions returns the number of live sessions.
func (s *Server) Sessions() int { return s.sessions.Len() }

// Close shuts the pipeline down: it drains (see [Server.Drain]; at once
// when the drain is over already), then ends every session (its streams
// end, and a request still waiting is answered with an error) and stops
// every child, the pooled ones included: its stdin is closed and its
// process group sent SIGTERM, then SIGKILL after TermGrace (at once when
// ctx ends). It returns when all children are gone, the readiness probes'
// included.
func (s *Server) Close(ctx context.Context) error {
	s.Drain(ctx)
	s.closing.Store(true)
	s.endLife()
	err := errors.Join(s.sessions.Close(ctx), s.pool.Close(ctx))
	s.probes.Wait() // each ends soon after life: its child is killed
	return err
}

// countRequests returns the stage that counts the requests of era, when
// Metrics is on; else nil.
func (s *Server) countRequests(era string) mw.Middleware {
	if !s.cfg.Metrics {
		return nil
	}
	return mw.CountRequests(mw.CountOptions{Metrics: s.metrics.era(eraIndex(era))})
}

// parked counts the calls ParkChildRequests parks, for the metrics.
func (s *Server) parked(delta int) { s.metrics.parked.Add(int64(delta)) }

// startSession starts a session's child behind the session's stages.
func (s *Server) startSession(_ context.Context, id string, conn *mw.Conn) (mw.Backend, error) {
	short := mw.ShortSessionID(id)
	log := s.log.With("session", short)
	toChild := &mw.Late{}
	d := mw.Chain(s.sessionStages(conn, log)...)(mw.Duplex{ToServer: toChild, ToClient: mw.Discard()})
	child, err := s.startChild(conn, "["+short+"] ", log, d.ToClient)
	if err != nil {
		return nil, err
	}
	toChild.Bind(child)
	return &childBackend{entry: d.ToServer, child: child, closing: &s.closing}, nil
}

// child is a child process whose states are counted (see childTrack).
type child struct {
	*transport.Child
	track *childTrack
}

// Close ends the child; see transport.Child.Close.
func (c *child) Close(ctx context.Context) error {
	c.track.stopping()
	return c.Child.Close(ctx)
}

// Terminate ends the child without the stdin grace; see
// transport.Child.Terminate.
func (c *child) Terminate(ctx context.Context) error {
	c.track.stopping()
	return c.Child.Terminate(ctx)
}

// startChild starts a child process whose lines go to sink, in a context
// carrying conn. Its start's outcome goes to the readiness (see Ready):
// a failure when it cannot run, or exits on its own before it wrote
// anything; a success once it wrote a message.
func (s *Server) startChild(conn *mw.Conn, stderrPrefix string, log *slog.Logger, sink mw.Handler) (*child, error) {
	stderr := s.stderr
	if s.cfg.Name != "" && strings.HasPrefix(stderrPrefix, "[") {
		stderrPrefix = "[" + s.cfg.Name + " " + stderrPrefix[1:] // [NAME 27cbc457b39d]
	}
	if s.cfg.ChildStderrRecords {
		stderr, stderrPrefix = &recordWriter{log: log}, ""
	}
	t := s.newChildTrack(sink)
	c, err := transport.StartChild(transport.ChildConfig{
		Command:        s.cfg.Command,
		Env:            s.env,
		Dir:            s.cfg.Dir,
		Supervisor:     s.cfg.Supervisor,
		Stderr:         stderr,
		StderrPrefix:   stderrPrefix,
		MaxMessageSize: s.cfg.MaxMessageSize,
		MaxDepth:       s.cfg.MaxDepth,
		Budget:         s.cfg.Budget,
		StdinGrace:     s.cfg.StdinGrace,
		TermGrace:      s.cfg.TermGrace,
		Context:        mw.WithConn(context.Background(), conn),
		OnExit:         t.exited,
		Logger:         log,
	}, t)
	if err != nil {
		t.failedStart(err)
		return nil, err
	}
	return &child{Child: c, track: t}, nil
}

// startPooledChild starts the child that serves principal's 2026-07-28
// clients: the gateway's own handshake first (a child that exits on the
// server/discover is started again and taken for one of the session era),
// then the stages of its kind in front of it.
func (s *Server) startPooledChild(ctx context.Context, principal string) (mw.Backend, error) {
	conn := mw.NewConn(mw.EraUnknown)
	conn.SetPrincipal(principal)
	log := s.log.With("pool", eraModern)
	own := s.childAnswers(log)
	child, fromChild, err := s.handshakeChild(ctx, conn, "["+eraModern+"] ", log, own)
	if err != nil {
		return nil, err
	}
	d := mw.Chain(s.pooledStages(conn, log, own)...)(mw.Duplex{ToServer: child, ToClient: mw.Discard()})
	fromChild.Bind(d.ToClient)
	go func() {
		<-child.Done()
		conn.Close(errors.New("the server process exited"))
	}()
	return &pooledBackend{childBackend: childBackend{entry: d.ToServer, child: child, closing: &s.closing}, conn: conn}, nil
}

// childAnswers returns the answers serve gives, in its own name, to the
// requests of one pooled child that no client can be given (see
// mw.ChildAnswers).
func (s *Server) childAnswers(log *slog.Logger) *mw.ChildAnswers {
	return mw.NewChildAnswers(mw.ChildAnswersOptions{Roots: s.roots, Logger: log})
}

// handshakeChild starts a child for conn by serve's start policy
// (mw.StartChild: the gateway's own handshake, a child that exits on the
// server/discover started again and taken for one of the session era).
// Its messages go to the returned Late, bound to the handshake until it
// is bound anew; its requests meanwhile are answered by own. A failed
// handshake counts as a failed start (see Ready).
func (s *Server) handshakeChild(ctx context.Context, conn *mw.Conn, stderrPrefix string, log *slog.Logger, own *mw.ChildAnswers) (*child, *mw.Late, error) {
	start := func(fromChild mw.Handler) (*child, error) { return s.startChild(conn, stderrPrefix, log, fromChild) }
	return mw.StartChild(ctx, start, mw.StartChildOptions{
		Conn:          conn,
		Own:           own,
		ClientVersion: s.cfg.Version,
		Outcome:       s.ready.record,
		Logger:        log,
	})
}

// pooledStages lists the stages in front of a pooled child, nearest the
// client first, for the kind of child its handshake found.
func (s *Server) pooledStages(conn *mw.Conn, log *slog.Logger, own *mw.ChildAnswers) []mw.Middleware {
	router := mw.ModernRouter(mw.ModernRouterOptions{Conn: conn, Rand: s.cfg.Rand, Logger: log})
	paramHeaders := mw.CheckParamHeaders(mw.ParamCheckOptions{Rand: s.cfg.Rand, Logger: log})
	if conn.Era() == mw.EraStateless { // dual-era: its own 2026-07-28 face
		return []mw.Middleware{
			router,
			s.toolFilter,  // below the router: ids minted, unique on the child
			s.shareListen, // one listen on the child per filter, fanned out
			paramHeaders,
			mw.AwaitAnswers(conn),
		}
	}
	return []mw.Middleware{ // session era only: translated
		router,
		s.toolFilter, // below the router: ids minted, unique on the child
		mw.StampResults(mw.StampOptions{CacheTTL: s.cfg.CacheTTL, Logger: log}),
		s.listen,
		paramHeaders, // below the listens, which take the child's list_changed
		mw.ParkChildRequests(mw.ParkOptions{
			StateKey:  s.cfg.StateKey,
			ReplicaID: s.cfg.ReplicaID,
			StateTTL:  s.cfg.InputTimeout,
			Gather:    ParkGather,
			Parked:    s.parked,
			Shared:    own, // many clients: a request is a call's only when serve can tell
			Logger:    log,
		}),
		mw.LocalDiscover(mw.LocalDiscoverOptions{KeepResourceSubscribe: mw.ServesResourceSubscriptions, Logger: log}),
		mw.StripModernMeta(),
		mw.AwaitAnswers(conn),
	}
}

// pooledBackend is a pooled child's backend: messages reach its stages
// with its connection state in their context.
type pooledBackend struct {
	childBackend
	conn *mw.Conn
}

func (b *pooledBackend) Handle(ctx context.Context, m frame.Message) error {
	return b.entry.Handle(mw.WithConn(ctx, b.conn), m)
}

// childBackend is a session's backend: the session's stages in front of
// its child.
type childBackend struct {
	entry   mw.Handler
	child   *child
	closing *atomic.Bool // the gateway is shutting down
}

func (b *childBackend) Handle(ctx context.Context, m frame.Message) error {
	return b.entry.Handle(ctx, m)
}
func (b *childBackend) Done() <-chan struct{} { return b.child.Done() }

// EndCause says why the child ended on its own: its exit status, and the
// stderr lines that explain it (see mw.BackendEndCause).
func (b *childBackend) EndCause() error {
	return mw.NewChildExitError("", b.child.Err(), b.child.StderrExcerpt())
}

// EndedOnItsOwn reports whether the child has ended, and not because it
// was closed.
func (c *child) EndedOnItsOwn() bool { return c.track.endedOnItsOwn() }
func (b *childBackend) Close(ctx context.Context) error {
	if b.closing.Load() {
		return b.child.Terminate(ctx) // within the bound of a shutdown
	}
	return b.child.Close(ctx)
}

// childEnv returns the children's environment: env (or the gateway's
// own) without serve's secrets — the token, the state key, the
// introspection secret — and without ParentPIDEnv, which asks serve, not
// its children, to end with its parent.
func childEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, ServeTokenEnv+"=") && !strings.HasPrefix(kv, StateKeyEnv+"=") && !strings.HasPrefix(kv, server.IntrospectionSecretEnv+"=") && !strings.HasPrefix(kv, ParentPIDEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// lineWriter serialises Writes from several children, so that their
// stderr lines (one Write each) never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// recordWriter makes each line of a child's stderr (one per Write, see
// transport.ChildConfig.Stderr) a record of log: msg the line, without
// its end, and source=child.
type recordWriter struct{ log *slog.Logger }

func (r *recordWriter) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\r\n")
	r.log.LogAttrs(context.Background(), slog.LevelInfo, line, slog.String("source", "child"))
	return len(p), nil
}
